// Package housekeeping holds the checks of the code base's own rules that
// no compiler or vet enforces: for now, that a function over 60 lines says
// why it is long. It has no code of its own; its tests read the module's
// sources.
package housekeeping
