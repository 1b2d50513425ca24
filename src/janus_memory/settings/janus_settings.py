"""The `janus` section of the run settings: JanusSettings, the controller overrides on the preset's JanusConfig, typed
with fields generated from JanusConfig's flat keys (so the two cannot drift apart). The section takes the flat keys
(``tau: 0.1``), the grouped form (``trigger: {kind: mmt, tau: 0.1}``) or a mix; it holds and stores the flat keys.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, create_model, model_serializer, model_validator


class _JanusSettingsBase(BaseModel):
    """Controller settings (the fields of controller.JanusConfig, typed; ranges and names are checked by JanusConfig
    itself, one source of truth). Only the keys that were set count: they override the preset's JanusConfig
    (``presets.janus_config``). Serialised as the set keys only. The fields are generated from JanusConfig's flat keys
    (names, types, defaults) below, so the two cannot drift apart; a grouped key (``trigger: {kind: mmt}``) is read as
    its flat twin, and a flat key and its grouped twin with different values are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _grouped_keys(cls, data: Any) -> Any:
        from pydantic_core import PydanticCustomError

        from ..controller.config import GROUPS, flatten

        if isinstance(data, dict) and any(k in GROUPS and isinstance(v, dict) for k, v in data.items()):
            try:
                return flatten(data)
            except ValueError as e:  # one line naming the key (settings/config.py config_error)
                raise PydanticCustomError("range", "{rule}", {"rule": str(e)}) from None
        return data

    @model_serializer(mode="wrap")
    def _set_keys_only(self, handler):
        data = handler(self)
        return {k: v for k, v in data.items() if k in self.model_fields_set}

    def overrides(self) -> dict:
        """The keys that were set, with their values."""
        return {k: getattr(self, k) for k in type(self).model_fields if k in self.model_fields_set}

    # read like the dict it used to be (grid/sweep/tests: ``{**cfg.janus}``, ``cfg.janus.get("trigger")``)
    def keys(self):
        return self.overrides().keys()

    def __getitem__(self, key: str):
        return self.overrides()[key]

    def get(self, key: str, default: Any = None):
        return self.overrides().get(key, default)

    def __iter__(self):  # a mapping's iteration: the set keys
        return iter(self.overrides())

    def items(self):
        return self.overrides().items()

    def __contains__(self, key: object) -> bool:
        return key in self.model_fields_set

    def __len__(self) -> int:
        return len(self.model_fields_set)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JanusSettings):
            return self.overrides() == other.overrides()
        if isinstance(other, dict):
            return self.overrides() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-looking mapping


def _janus_settings_model() -> type[BaseModel]:
    import dataclasses
    import typing

    from ..controller.config import FLAT, GROUPS, JanusConfig

    def spec(group: str | None, name: str) -> tuple[Any, Any]:
        cls = JanusConfig if group is None else GROUPS[group]
        return typing.get_type_hints(cls)[name], next(f.default for f in dataclasses.fields(cls) if f.name == name)

    fields = {key: spec(group, name) for key, (group, name) in FLAT.items()}
    return create_model("JanusSettings", __base__=_JanusSettingsBase, __module__=__name__,
                        **fields)  # type: ignore[call-overload]  # field specs built at run time


if TYPE_CHECKING:  # a pydantic model built at run time: the type checker sees its base
    JanusSettings = _JanusSettingsBase
else:
    JanusSettings = _janus_settings_model()
