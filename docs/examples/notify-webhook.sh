#!/bin/sh
# A notify program for acr (acr run --notify, ACR_NOTIFY, notify: in acr.yaml):
# posts the notification to the webhook ACR_NOTIFY_URL (Slack, Mattermost and
# most chat and paging services take {"text": ...}), with the whole document
# beside the text for a receiver that reads it. The document's id names the
# condition: a receiver that sees an id twice can drop the repeat. Needs
# curl(1) and jq(1).
set -eu
url=${ACR_NOTIFY_URL:?set ACR_NOTIFY_URL to the webhook to post to}
jq -c '{text: (.summary + "\nnext: " + .next), acr: .}' |
  curl --silent --show-error --fail --max-time 20 -H 'Content-Type: application/json' --data-binary @- "$url" >/dev/null
