package main

import (
	"io"
	"testing"
)

// TestNoticesCurrent fails when THIRD_PARTY_NOTICES.md does not match the
// modules the binaries link, or when one of them has a licence we cannot ship.
func TestNoticesCurrent(t *testing.T) {
	if err := run("../..", false, io.Discard); err != nil {
		t.Fatal(err)
	}
}

func TestClassify(t *testing.T) {
	cases := map[string]string{
		"Permission is hereby granted, free of charge, to any person":                                       "MIT",
		"Apache License\n Version 2.0, January 2004":                                                        "Apache-2.0",
		"Redistribution and use in source and binary forms ... Neither the name of Google":                  "BSD-3-Clause",
		"Redistribution and use in source and binary forms, with or without modification":                   "BSD-2-Clause",
		"Mozilla Public License Version 2.0":                                                                "MPL-2.0",
		"GNU GENERAL PUBLIC LICENSE Version 3":                                                              "GPL",
		"some words":                                                                                        "unknown",
		"Creative Commons CC0 1.0 Universal":                                                                "CC0-1.0",
		"#### MIT License #### Permission is hereby granted, free of charge ... Apache License Version 2.0": "Apache-2.0 AND MIT",
	}
	for text, want := range cases {
		if got := classify(text); got != want {
			t.Errorf("classify(%q) = %s, want %s", text, got, want)
		}
	}
}

func TestShippable(t *testing.T) {
	for expr, want := range map[string]bool{
		"MIT":                                  true,
		"Apache-2.0 AND MIT":                   true,
		"(MIT OR GPL-3.0)":                     true,
		"MIT AND GPL":                          false,
		"GPL":                                  false,
		"unknown":                              false,
		"(Apache-2.0 OR MIT) AND BSD-3-Clause": true,
		"(GPL-2.0 OR LGPL) AND MIT":            false,
	} {
		if got := shippable(expr); got != want {
			t.Errorf("shippable(%q) = %v, want %v", expr, got, want)
		}
	}
}
