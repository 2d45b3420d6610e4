# Generates the P14 scenario files. Kept beside them so the data can be
# regenerated and reviewed; the JSON files are what acr reads.
import json

def dump(n, o):
    with open(n, "w") as f:
        json.dump(o, f, indent=2, ensure_ascii=False)
        f.write("\n")

typo = lambda i: {"id": f"typo-{i}", "summary": f"page {i} misspells 'the'", "kind": "absent_text", "path": f"docs/page-{i}.md",
                  "text": "teh ", "priority": 30, "fixes": [{"operation": "apply_local_patch", "find": "teh ", "replace": "the "}]}
checks = [typo(i) for i in range(8)]
checks += [
  {"id": "no-todo", "summary": "notes must not contain TODO markers", "kind": "absent_text", "path": "NOTES.md", "text": "TODO", "priority": 60,
   "fixes": [{"operation": "apply_local_patch", "find": "TODO(intro)", "replace": "DONE(intro)"}, {"operation": "apply_local_patch", "find": "TODO", "replace": "DONE"}]},
  {"id": "schema-v2", "summary": "move the schema to v2 once the v2 dataset exists", "kind": "absent_text", "path": "data/schema.txt",
   "text": "version: 1", "priority": 70, "requires_evidence": ["dataset-v2"], "fixes": [{"operation": "apply_local_patch", "find": "version: 1", "replace": "version: 2"}]},
  {"id": "archive-index", "summary": "rebuild the archive index once the archive export exists", "kind": "absent_text", "path": "archive/index.txt",
   "text": "stale", "priority": 65, "requires_evidence": ["archive-export"], "fixes": [{"operation": "apply_local_patch", "find": "stale", "replace": "fresh"}]},
  {"id": "debug-off", "summary": "debug mode is on", "kind": "absent_text", "path": "config/app.ini", "text": "debug = true", "priority": 80,
   "fixes": [{"operation": "apply_local_patch", "find": "debug = true", "replace": "debug = false"}]},
  {"id": "license", "summary": "the project has no LICENSE file", "kind": "file_exists", "path": "LICENSE", "priority": 10,
   "fixes": [{"operation": "record_artifact", "content": "MIT License\n"}]},
]
files = {f"docs/page-{i}.md": f"page {i}: teh text\n" for i in range(8)}
files["README.md"] = "# Mixed run\n"
env = {"schema": "acr.environment/v0.1", "files": files, "checks": checks,
       "evidence": [{"id": "dataset-v2", "path": "incoming/dataset-v2.csv"}, {"id": "archive-export", "path": "incoming/archive.tar"}]}
# Standing commitments the goal makes for the loop (docs/formats.md): the
# configuration watched every 6 hours until the evening (modified when a
# period comes due and when the amendment below narrows its scope,
# suspended at the approval boundary and resumed by the approval,
# completed at its deadline), the archive index by the end of the day
# (suspended on its missing evidence, abandoned when the amendment removes
# its check), and the release pages by the release (its deadline moved by
# a signal, completed when the new deadline comes).
commitments = [
  {"id": "config-watch", "summary": "look at the production configuration and the licence every 6 hours until the evening",
   "checks": ["debug-off", "license"], "every": "6h", "by": "2026-01-01T16:30:00Z"},
  {"id": "archive-refresh", "summary": "a fresh archive index by the end of the day", "checks": ["archive-index"], "by": "2026-01-01T20:00:00Z"},
  {"id": "release-docs", "summary": "pages 6 and 7 free of typos by the release", "checks": ["typo-6", "typo-7"],
   "by": "2026-01-01T12:00:00Z", "moved_by": "release-date"},
]
goal = {"schema": "acr.goal/v0.1", "id": "p14", "mission": "Keep a small project healthy over a long unattended run.",
        "success": {"all_checks_pass": True}, "commitments": commitments,
        "lenses": [{"id": "alternative-remedy", "summary": "when a remedy keeps failing, try the next one, critique first",
                    "source_ref": "src:wujiece-handbook", "source_version": "2026-08-01", "applies_to": ["repeated_failure"],
                    "routing": {"prefer_next_fix": True, "critique_first": True}}]}
# The amended environment: the archive export is not coming and the
# licence is settled, so both checks go (the world stays as pinned).
env2 = dict(env, checks=[c for c in checks if c["id"] not in ("archive-index", "license")])
contract = {"schema": "acr.contract/v0.1", "id": "p14", "authority": {"id": "operator", "mode": "project_write"},
            "coordinates": {"readiness": "L2", "autonomy": "A2", "cognitive_depth": "D2"},
            "rules": [{"operation": "apply_local_patch", "paths": ["config/**"], "effect": "approve"},
                      {"operation": "*", "paths": ["vendor/**"], "effect": "forbid"},
                      {"operation": "*", "paths": ["**"], "effect": "allow"}],
            "budgets": {"cycles": {"soft": 150, "hard": 200}},
            "policy": {"compact_every_cycles": 40, "commitment_deadline_seconds": 21600}}
W = lambda p, c: {"world": {"write": p, "content": c}}
steps = [
  {"note": "cycles 1-10: local health issues, direct path", "run": 20,
   "expect": {"world_lacks": {"docs/page-0.md": "teh "}}},
  {"note": "cycles 11-20: repeated failure triggers a strategic review",
   **W("NOTES.md", "# Notes\n\nTODO(intro)\n\n- parser fixed (TODO: link)\n")},
  {"run": 20, "expect": {"world_lacks": {"NOTES.md": "TODO"}}},
  {"note": "cycles 21-30: evidence unavailable: deferral, promotion, sleep", **W("data/schema.txt", "name: readings\nversion: 1\n")},
  W("archive/index.txt", "stale\n"),
  {"run": 20, "expect": {"disposition": "SLEEP", "live_commitments": 4}},
  {"advance": "1h"},
  {"run": 20, "expect": {"executed": 0}},
  {"repeat": {"times": 4, "steps": [W("scratch/tick.txt", "tick\n"), {"run": 5}, W("scratch/tick.txt", "tock\n"), {"run": 5}]}},
  {"note": "cycles 31-40: evidence arrives: wake and explicit resume", **W("incoming/dataset-v2.csv", "id,value\n1,42\n")},
  {"wake": {"source": "commitment_wake_condition", "ref": "dataset-v2", "dedup_key": "dataset-v2"}},
  {"run": 20, "expect": {"live_commitments": 3, "world_contains": {"data/schema.txt": "version: 2"}}},
  {"note": "cycles 41-50: commitment lifecycle: a standing commitment's period comes due while the run sleeps", "advance": "6h"},
  {"run": 20, "expect": {"executed": 1, "live_commitments": 3, "events": {"commitment.modified": 1}}},
  {"repeat": {"times": 4, "steps": [W("docs/page-1.md", "page 1: teh text\n"), {"run": 5}]}},
  {"note": "cycles 51-60: healthy quiet windows (the run sleeps on its commitments' times)",
   "repeat": {"times": 8, "steps": [W("scratch/window.txt", "quiet\n"), {"run": 5}, W("scratch/window.txt", "still quiet\n"), {"run": 5}]}},
  {"note": "cycles 61-70: relational approval request", **W("config/app.ini", "[server]\ndebug = true\n")},
  {"run": 20, "expect": {"disposition": "WAIT_APPROVAL", "pending_approvals": 1}},
  {"run": 20, "expect": {"executed": 0}},
  {"repeat": {"times": 2, "steps": [W("docs/page-2.md", "page 2: teh text\n"), {"run": 5}]}},
  {"note": "cycles 71-80: approval resolution and the resumed action", "approve": "debug-off"},
  {"run": 20, "expect": {"pending_approvals": 0, "world_contains": {"config/app.ini": "debug = false"}}},
  {"repeat": {"times": 3, "steps": [W("docs/page-3.md", "page 3: teh text\n"), {"run": 5}]}},
  {"note": "cycles 81-90: crashes around the action commit, and recovery", **W("docs/page-4.md", "page 4: teh text\n")},
  {"crash": {"failpoint": "after-action-commit"}},
  {"recover": True, "expect": {"recovery": {"classification": "interrupted_after_action_commit", "actions_reused": 1}}},
  W("docs/page-5.md", "page 5: teh text\n"),
  {"crash": {"failpoint": "before-action-commit"}},
  {"recover": True, "expect": {"recovery": {"classification": "interrupted_before_action_commit", "actions_applied": 1}}},
  {"run": 20},
  {"repeat": {"times": 2, "steps": [W("docs/page-6.md", "page 6: teh text\n"), {"run": 5}]}},
  {"note": "the environment is amended: two checks go, one standing commitment narrows, another is abandoned",
   "amend": {"environment": "environment-2.json"}},
  {"run": 5},
  {"approve": "amendment:environment"},
  {"run": 5, "expect": {"events": {"amendment.accepted": 1}}},
  {"run": 5, "expect": {"live_commitments": 2, "events": {"commitment.abandoned": 1, "commitment.modified": 2}}},
  {"note": "the release moves: a signal moves the release pages' deadline",
   "wake": {"source": "external_event", "ref": "release-date", "payload": {"deadline": "2026-01-01T18:00:00Z"}}},
  {"run": 5, "expect": {"events": {"commitment.modified": 3}}},
  {"note": "cycles 91-100: mixed stable, idle, commitment and strategy work",
   "repeat": {"times": 11, "steps": [W("docs/page-7.md", "page 7: teh text\n"), {"run": 5},
                                    {"wake": {"source": "scheduled_tick", "reason": "hourly look"}}, {"run": 5}, {"advance": "1h"}]}},
  {"note": "the release deadline comes: the pages are clean, the promise is kept", "run": 20,
   "expect": {"disposition": "IDLE", "live_commitments": 0}},
]
sc = {"schema": "acr.scenario/v0.1", "name": "p14-mixed-100", "title": "100-cycle mixed autonomous sandbox run",
      "description": "The seed's §19 regime over about a hundred cycles without per-cycle human prompts: health issues on the direct path, repeated failure and a strategic review, evidence unavailable (deferral, promotion, sleep), evidence arriving (wake, explicit resume), three standing commitments the goal declares (a period coming due while the run sleeps, one suspended at the approval boundary and resumed by the approval, one abandoned and one narrowed by an environment amendment, a deadline moved by a signal, two kept at their deadlines), compaction, sleep windows, an approval request and its resolution, crashes around the action commit with recovery, and mixed work to the end. The only human acts are the world changes of the script, one approval, one environment amendment and its acceptance, and wake signals.",
      "seed_ref": "phase12 §17 P14, §19", "start": "2026-01-01T00:00:00Z", "gates": ["A", "S"],
      "steps": steps,
      "expect": {"final_disposition": "IDLE",
                 "transition_classes": ["commitment_created", "commitment_modified", "commitment_suspended", "commitment_resumed",
                                        "commitment_abandoned", "commitment_completed", "strategic_review", "direct_path", "agenda_selected", "no_agenda", "idle", "sleep", "wake", "deferred",
                                        "commitment_transition", "context_compaction", "governance_boundary", "crash_recovery",
                                        "idempotent_outcome_recovery", "wait_approval", "approval_resolved", "sandbox_action"]}}
dump("goal.json", goal); dump("contract.json", contract); dump("environment.json", env); dump("environment-2.json", env2)
dump("scenario.json", sc)
