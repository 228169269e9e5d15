//go:build !race

package einvoice_test

// bigLines is the size of the corpus's long invoice (see race_test.go).
const bigLines = 1000
