#!/usr/bin/env bash
# Keeps seed.md's command line working: scripts/bench.sh [flags] runs codendum bench [flags].
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
exec cargo run --quiet --release --manifest-path "$here/Cargo.toml" -- bench "$@"
