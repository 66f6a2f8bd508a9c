package main

import (
	"errors"
	"log/slog"

	"github.com/shipstream/bloodraven/pkg/mysqlsim"
)

func startControl(string, *mysqlsim.Server, *slog.Logger) (func(), error) {
	return nil, errors.New("-control-addr: not implemented yet")
}
