//! Timing checks of the client and the twin (paced streams, step lateness),
//! in a binary of their own so that no other test shares the cores while they
//! measure.

mod firehose;
mod fleet_streams;
mod replay_class;
mod twin_lateness;
