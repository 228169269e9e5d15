package billing

// CheckBatch exposes a batch's validation and record encoding (checkBatch:
// the work between decoding and the transaction) to the external
// benchmarks; it stores nothing and returns the validation error.
func (s *Service) CheckBatch(account string, p []UsageEventParams) error {
	var v validator
	ids, raw := s.newIDs(len(p))
	w := s.takeWrite()
	w.reset(account, make([]UsageEvent, len(p)), ids, raw)
	s.checkBatch(&v, w, ids, p)
	s.releaseWrite(w)
	return v.err()
}

// FixedIDRecord exposes fixedIDRecord: a usage_event_ids record (its key
// suffix after the account no, and its value) in the fixed layout of
// 28-byte entries, for the tests of records written in older layouts.
func FixedIDRecord(suffix, v []byte) ([]byte, error) { return fixedIDRecord(nil, suffix, v) }
