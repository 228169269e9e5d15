package billing

// errNotYet answers operations whose implementation has not landed yet.
var errNotYet = Errorf(CodeInternal, "not implemented yet")
