#!/bin/sh
# The example's proposer. With ACR_LLM_URL and ACR_LLM_MODEL set it asks a
# model (examples/proposers/openai-compatible); without, it answers from
# canned-proposals.json, so that the example runs offline, the same way each
# time. ACR_PROPOSER_BIN names the directory holding the built proposers
# (make example builds them into bin/).
here=$(cd "$(dirname "$0")" && pwd)
bin=${ACR_PROPOSER_BIN:-$here/../../bin}
if [ -n "$ACR_LLM_URL" ] && [ -n "$ACR_LLM_MODEL" ]; then
  exec "$bin/openai-compatible-proposer"
fi
exec "$bin/canned-proposer" "$here/canned-proposals.json"
