"""A scripted LangChain chat model that LangMem can bind tools to (langchain-core's stock fake chat models raise
NotImplementedError in ``bind_tools``): runs a LangMem memory manager offline, with no model. Used by
tests/integrations and ``examples/guarded_langmem.py --backend scripted``; needs langchain-core (the ``[langgraph]``
extra)."""
from __future__ import annotations

from collections.abc import Callable

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool


class ScriptedChat(BaseChatModel):
    """Replies with ``script(messages, tool_names) -> AIMessage``; ``calls`` keeps every (messages, tool names)."""

    script: Callable[[list[BaseMessage], list[str]], AIMessage]
    calls: list = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, tool_choice=None, **kw):  # noqa: D102 - the tools as OpenAI dicts, as a real model
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kw)

    def _generate(self, messages, stop=None, run_manager=None, **kw) -> ChatResult:
        names = [t["function"]["name"] for t in kw.get("tools") or []]
        self.calls.append((list(messages), names))
        return ChatResult(generations=[ChatGeneration(message=self.script(list(messages), names))])


def tool_call(name: str, args: dict, i: int = 0) -> dict:
    """One tool call as an AIMessage carries it."""
    return {"name": name, "args": args, "id": f"call_{name}_{i}", "type": "tool_call"}


def once(*calls: dict) -> Callable[[list[BaseMessage], list[str]], AIMessage]:
    """A script that makes ``calls`` on its first turn and answers plainly after (trustcall may ask again)."""
    state = {"n": 0}

    def script(messages, names):
        state["n"] += 1
        if state["n"] == 1:
            return AIMessage(content="", tool_calls=list(calls))
        return AIMessage(content="done")
    return script
