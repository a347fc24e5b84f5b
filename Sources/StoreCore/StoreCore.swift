// The few primitives both store modules need — the current time as an injectable clock, and
// base64url — kept below them so neither store module depends on the other.
