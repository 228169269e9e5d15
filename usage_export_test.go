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
