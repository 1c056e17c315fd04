package main

import (
	"io"
	"os"
	"sort"
)

func sortStrings(s []string) { sort.Strings(s) }

func readAllStdin() ([]byte, error) { return io.ReadAll(os.Stdin) }
