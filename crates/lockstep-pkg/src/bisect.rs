//! `lockstep pkg bisect` (see below).
