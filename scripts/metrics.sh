#!/usr/bin/env bash
# Keeps seed.md's command line working: scripts/metrics.sh [flags] runs codendum metrics [flags].
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
exec cargo run --quiet --release --manifest-path "$here/Cargo.toml" -- metrics "$@"
