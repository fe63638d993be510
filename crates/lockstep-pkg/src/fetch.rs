//! `lockstep pkg fetch` (see below).
