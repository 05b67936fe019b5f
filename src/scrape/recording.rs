//! The files a sampler appends each sample to the moment it is taken
//! (`server-timeline.jsonl`, and `replica-timeline.jsonl` for a fleet).

use codendum_core::prom::replicas::ReplicaSample;
use codendum_core::prom::window::TimelineSample;
use codendum_core::results::JsonlWriter;

/// Where a sampler appends each sample the moment it is taken.
#[derive(Debug, Default)]
pub struct Recording {
    /// `server-timeline.jsonl` (the fleet's sum).
    pub fleet: Option<JsonlWriter<std::fs::File, TimelineSample>>,
    /// `replica-timeline.jsonl` (each replica; written only for a fleet).
    pub replicas: Option<JsonlWriter<std::fs::File, ReplicaSample>>,
}

impl Recording {
    /// Appends a sample (and each replica's) to the files. A file that
    /// cannot be written is dropped, and what was lost is returned (one
    /// message per file, once), for the caller to tell; sampling goes on.
    pub fn append(&mut self, fleet: &TimelineSample, replicas: &[ReplicaSample]) -> Vec<String> {
        let mut lost = Vec::new();
        if let Some(writer) = self.fleet.as_mut() {
            if let Err(e) = writer.append(fleet) {
                lost.push(format!("cannot write the server timeline: {e}"));
                self.fleet = None;
            }
        }
        if let Some(writer) = self.replicas.as_mut() {
            if let Err(e) = replicas.iter().try_for_each(|r| writer.append(r)) {
                lost.push(format!("cannot write the replica timeline: {e}"));
                self.replicas = None;
            }
        }
        lost
    }
}
