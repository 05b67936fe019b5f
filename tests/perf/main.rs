//! Timing checks of the client and the twin (paced streams, step lateness),
//! in a binary of their own so that no other test shares the cores while they
//! measure.

mod client_pacing;
mod firehose;
mod fleet_streams;
mod interrupt;
mod twin_lateness;
mod twin_throughput;
