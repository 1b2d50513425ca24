"""Run by test_mem0ai_legacy_guard.py in a process whose path starts with a mem0ai 1.0.x install: the guard stages 1.x's
ADD/UPDATE/DELETE events before they are applied. Prints one JSON line of observations."""
from __future__ import annotations

import json
import re
import sys
import tempfile

from janus_memory.integrations import Probe, WriteGuard  # noqa: E402
from janus_memory.integrations.mem0 import GuardedMemory, mem0_major  # noqa: E402
from lib_fakes import Mem0Server  # noqa: E402
from mem0_setup import facts_of, local_memory, newest_agent  # first: telemetry off before mem0 is imported

# fact -> (event, a word of the memory it acts on)
ACTIONS = {"The refund cap is $10 per order.": ("UPDATE", "refund"),
           "Forget the customer's name.": ("DELETE", "name"),
           "Invoices go to ada@example.org.": ("ADD", None)}
OLD = re.compile(r"""'id': '(\d+)', 'text': (['"])(.*?)\2""")


def chat(body: dict) -> str:
    msgs = body.get("messages", [])
    if any(m.get("role") == "system" for m in msgs):
        return json.dumps({"facts": facts_of(body)})
    prompt = msgs[-1]["content"]
    old = [(i, t) for i, _, t in OLD.findall(prompt)]
    out = []
    for fact, (event, word) in ACTIONS.items():
        if fact not in prompt:
            continue
        if event == "ADD":
            out.append({"id": str(len(old)), "text": fact, "event": "ADD"})
        else:
            i, t = next((i, t) for i, t in old if word in t.lower())
            out.append({"id": i, "text": t if event == "DELETE" else fact, "event": event, "old_memory": t})
    return json.dumps({"memory": out})


def main() -> None:
    obs: dict = {"major": mem0_major()}
    with Mem0Server(chat=chat) as srv:
        m = local_memory(srv.base_url, tempfile.mkdtemp(prefix="janus-mem0v1-"))
        for s in ["The refund cap is $100 per order.", "The customer's name is Ada Lovelace."]:
            m.add([{"role": "user", "content": s}], user_id="u1", infer=False)
        probes = [Probe("cap", "What is the refund cap per order?", expected="$100"),
                  Probe("name", "What is the customer's name?", expected="Ada"),
                  Probe("mail", "Which email address gets the invoices?", expected="ada@example.org")]
        g = GuardedMemory(m, WriteGuard(probes, newest_agent))
        ids = {x["memory"]: x["id"] for x in m.get_all(user_id="u1")["results"]}
        for name, text in [("update", "The refund cap is $10 per order."),
                           ("delete", "Forget the customer's name."),
                           ("add", "Invoices go to ada@example.org.")]:
            res = g.add([{"role": "user", "content": f"USER SAID: {text}"}], user_id="u1")
            obs[name] = {"guard": res["guard"], "results": res["results"],
                         "writes": g.decisions[-1].writes,
                         "memories": sorted(x["memory"] for x in m.get_all(user_id="u1")["results"])}
        obs["cap_history"] = [h["event"] for h in m.history(ids["The refund cap is $100 per order."])]
        obs["name_history"] = [h["event"] for h in m.history(ids["The customer's name is Ada Lovelace."])]
        obs["methods_restored"] = all(n not in vars(m) for n in ("_create_memory", "_update_memory",
                                                                 "_delete_memory"))
    print(json.dumps(obs))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
