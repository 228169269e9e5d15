//go:build race

package einvoice_test

// bigLines is the size of the corpus's long invoice. Under the race
// detector, which makes creating a thousand lines one by one take minutes,
// it has 200; the run without it (CI's PostgreSQL pass) checks 1,000.
const bigLines = 200
