#!/bin/sh
# A notify program for acr (acr run --notify, ACR_NOTIFY, notify: in acr.yaml)
# on your own machine: a desktop notification with the summary and the next
# command. acr scrubs the environment, so pass the session's bus along:
# ACR_NOTIFY_DBUS=$DBUS_SESSION_BUS_ADDRESS. Needs notify-send(1) and jq(1).
set -eu
doc=$(cat)
urgency=normal
case $(printf '%s' "$doc" | jq -r .kind) in
  faulted|uncertain_effect) urgency=critical ;;
esac
DBUS_SESSION_BUS_ADDRESS=${ACR_NOTIFY_DBUS:-${DBUS_SESSION_BUS_ADDRESS:-}}
export DBUS_SESSION_BUS_ADDRESS
notify-send --app-name=acr --urgency="$urgency" "$(printf '%s' "$doc" | jq -r .summary)" "$(printf '%s' "$doc" | jq -r .next)"
