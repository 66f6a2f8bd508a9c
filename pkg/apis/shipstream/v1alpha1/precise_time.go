package v1alpha1

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PreciseTime is a metav1.MicroTime, written to the microsecond as it is,
// that also reads a time written without a fraction: metav1.MicroTime
// refuses those, and operator builds before this type stored
// status.transition.sourceFenceDeadline as a metav1.Time, to the second. An
// upgraded operator meeting such a transition in flight must still decode
// the group. (An older build reads the fraction and writes the value back
// truncated to the second; docs/safety.md, Deadlines and clock skew.)
// Embedding the MicroTime keeps apimachinery's semantic equality, which
// status writes compare with, and its unstructured form.
//
// +k8s:deepcopy-gen=false
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:Format=date-time
type PreciseTime struct {
	metav1.MicroTime `json:",inline"`
}

// NewPreciseTime wraps t.
func NewPreciseTime(t time.Time) PreciseTime { return PreciseTime{metav1.NewMicroTime(t)} }

// DeepCopyInto copies the value, as metav1.MicroTime's does.
func (t *PreciseTime) DeepCopyInto(out *PreciseTime) { *out = *t }

// DeepCopy returns a copy, nil for nil.
func (t *PreciseTime) DeepCopy() *PreciseTime {
	if t == nil {
		return nil
	}
	out := *t
	return &out
}

// MarshalJSON writes what metav1.MicroTime writes.
func (t PreciseTime) MarshalJSON() ([]byte, error) { return t.MicroTime.MarshalJSON() }

// UnmarshalJSON reads RFC 3339 with or without a fractional second.
func (t *PreciseTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	pt, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	t.Time = pt.Local()
	return nil
}
