#!/usr/bin/env bash
# Issue 16: what users read (README, docs/, --help and messages in tools/ and
# libtracer/, the Python package's docstrings, samples, data, scripts) points
# only at things a user has: never at the development notes beside the
# checkout (../shared: its data, seeds and cupti-notes), and at the design
# notes only by their place in the repository (docs/design.md). Prints each
# offending line and exits 1 if there is any.
set -u
cd "$(dirname "$0")/.."
paths=(README.md docs python/README.md python/tracer python/src tools libtracer injection samples
       data scripts)
pattern="\.\./shared|shared/data|\bseeds?/[0-9]|\bseeds'|cupti-notes|(^|[^/])design\.md"
hits=$(grep -rnIE "$pattern" "${paths[@]}" 2>/dev/null)
if [ -n "$hits" ]; then
  echo "user-facing text points at notes users do not have (explain in place or in docs/):"
  echo "$hits"
  exit 1
fi
echo "user_text: no reference to ../shared, seeds or cupti-notes in ${paths[*]}"
