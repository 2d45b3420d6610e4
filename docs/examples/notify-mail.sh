#!/bin/sh
# A notify program for acr (acr run --notify, ACR_NOTIFY, notify: in acr.yaml):
# mails the notification to ACR_NOTIFY_TO, its summary as the subject and the
# whole document, pretty-printed, as the body. acr gives it the document on
# stdin and a scrubbed environment: PATH, HOME, LANG, ACR_RUN_ID and the
# ACR_NOTIFY_* variables. Needs mail(1) and jq(1).
set -eu
to=${ACR_NOTIFY_TO:?set ACR_NOTIFY_TO to the address to tell}
doc=$(cat)
subject=$(printf '%s' "$doc" | jq -r .summary)
printf '%s\n\nnext: %s\n\n%s\n' "$subject" "$(printf '%s' "$doc" | jq -r .next)" "$(printf '%s' "$doc" | jq .)" |
  mail -s "$subject" "$to"
