// Package housekeeping holds the checks of the code base's own rules that
// no compiler or vet enforces: a function over 60 lines says why it is
// long, every exported struct field whose meaning is not obvious has a
// doc comment, and each package imports only what docs/ARCHITECTURE.md
// ("Who may import what") allows it. It has no code of its own; its tests read the module's
// sources.
package housekeeping
