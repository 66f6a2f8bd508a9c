package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// MaxBodyBytes bounds every document read by Decode: protocol documents are
// small, and a peer must not be able to make the other side buffer without
// limit.
const MaxBodyBytes = 1 << 20

// Decode reads one JSON document into v by the skew rules: unknown fields
// are ignored (a newer peer added them) and absent fields keep their zero
// value, which for the pointer fields means "not reported". Trailing data
// after the document is an error, so a truncated or concatenated body is not
// taken for a valid one.
func Decode(r io.Reader, v any) error {
	dec := json.NewDecoder(io.LimitReader(r, MaxBodyBytes+1))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode %T: %w", v, err)
	}
	if dec.More() {
		return fmt.Errorf("decode %T: trailing data after the document", v)
	}
	return nil
}

// DecodeResponse decodes a 2xx response body into v. For any other status it
// decodes the ErrorResponse (when there is one) into an *Error.
func DecodeResponse(resp *http.Response, v any) error {
	if resp.StatusCode/100 != 2 {
		var e ErrorResponse
		_ = Decode(resp.Body, &e)
		return &Error{StatusCode: resp.StatusCode, Code: e.Error, Message: e.Message}
	}
	return Decode(resp.Body, v)
}

// Error is a non-2xx answer.
type Error struct {
	StatusCode int
	Code       string // ErrorResponse.Error; empty when the body had none
	Message    string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("HTTP %d", e.StatusCode)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// IsNotLeader reports an answer from an operator process that is not the
// leader.
func IsNotLeader(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == ErrorNotLeader
}

// WriteJSON writes v as the JSON body of a response with status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError writes an ErrorResponse.
func WriteError(w http.ResponseWriter, code int, errCode, message string) {
	WriteJSON(w, code, ErrorResponse{Error: errCode, Message: message})
}
