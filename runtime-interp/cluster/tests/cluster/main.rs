//! The protocol's scripts against a real Redis: completing is atomic and
//! idempotent, leases are renewed only by their holder and taken over
//! after they expire.

mod protocol;
