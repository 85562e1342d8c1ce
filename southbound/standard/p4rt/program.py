"""The P4 program a switch runs, as its P4Info says: ids by name, the match fields and action
parameters of every table and action, and the group budget its action selector declares.

The shipped P4Info (:data:`P4INFO_PATH`, ``sai_subset.p4info.txtpb``) is what the emulated
switch serves; the driver reads the device's own with GetForwardingPipelineConfig and builds
its :class:`Program` from that, never from the shipped file.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from google.protobuf import text_format

from southbound.standard.pb import p4info_pb2
from southbound.types import GroupBudget

P4INFO_NAME = "sai_subset.p4info.txtpb"
#: the selector whose groups are the WCMP groups
WCMP_SELECTOR = "wcmp_group_selector"


class ProgramError(ValueError):
    """A P4Info that lacks what Heliostat programs (a table, an action, the selector...)."""


def shipped_p4info() -> p4info_pb2.P4Info:
    """The P4Info shipped with the package (what the emulated switch serves)."""
    text = resources.files(__package__).joinpath(P4INFO_NAME).read_text(encoding="utf-8")
    return text_format.Parse(text, p4info_pb2.P4Info())


@dataclass(frozen=True)
class Field:
    """A match field or action parameter: bitwidth 0 means an SDN string (a translated type)."""

    id: int
    name: str
    bitwidth: int
    match_type: int = 0  # p4info MatchField.MatchType (0 for action parameters)

    @property
    def is_string(self) -> bool:
        return self.bitwidth == 0


@dataclass(frozen=True)
class Table:
    id: int
    name: str  # the alias (vrf_table, ipv4_table...)
    fields: tuple[Field, ...]
    action_ids: frozenset[int]
    selector_id: int  # 0 when the table has no action profile
    direct_counter_id: int
    size: int


@dataclass(frozen=True)
class Action:
    id: int
    name: str
    params: tuple[Field, ...]


class Program:
    """Look-ups over one P4Info, by alias (``ipv4_table``) or id."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        strings = {name for name, t in p4info.type_info.new_types.items()
                   if t.HasField("translated_type") and t.translated_type.HasField("sdn_string")}
        self.tables: dict[str, Table] = {}
        self.actions: dict[str, Action] = {}
        for a in p4info.actions:
            params = tuple(Field(p.id, p.name, 0 if p.type_name.name in strings else p.bitwidth)
                           for p in a.params)
            self.actions[a.preamble.alias] = Action(a.preamble.id, a.preamble.alias, params)
        for t in p4info.tables:
            fields = tuple(Field(f.id, f.name, 0 if f.type_name.name in strings else f.bitwidth,
                                 f.match_type) for f in t.match_fields)
            counters = [i for i in t.direct_resource_ids
                        if any(c.preamble.id == i for c in p4info.direct_counters)]
            self.tables[t.preamble.alias] = Table(
                t.preamble.id, t.preamble.alias, fields, frozenset(r.id for r in t.action_refs),
                t.implementation_id, counters[0] if counters else 0, t.size)
        self._table_by_id = {t.id: t for t in self.tables.values()}
        self._action_by_id = {a.id: a for a in self.actions.values()}

    @classmethod
    def shipped(cls) -> Program:
        return cls(shipped_p4info())

    def table(self, name: str) -> Table:
        try:
            return self.tables[name]
        except KeyError:
            raise ProgramError(f"the P4Info has no table {name!r}") from None

    def action(self, name: str) -> Action:
        try:
            return self.actions[name]
        except KeyError:
            raise ProgramError(f"the P4Info has no action {name!r}") from None

    def table_by_id(self, table_id: int) -> Table | None:
        return self._table_by_id.get(table_id)

    def action_by_id(self, action_id: int) -> Action | None:
        return self._action_by_id.get(action_id)

    def selector(self) -> p4info_pb2.ActionProfile:
        for profile in self.p4info.action_profiles:
            if profile.preamble.alias == WCMP_SELECTOR:
                return profile
        raise ProgramError(f"the P4Info has no action profile {WCMP_SELECTOR!r}")

    def budget(self) -> GroupBudget:
        """The WCMP selector's declared budget: ``max_group_size`` (one group's sum of weights)
        and ``size`` (all groups'), under P4Runtime 1.4's ``sum_of_weights`` semantics."""
        profile = self.selector()
        if profile.WhichOneof("selector_size_semantics") != "sum_of_weights":
            raise ProgramError(f"{WCMP_SELECTOR}: the budget is read as a sum of weights, but the "
                               "P4Info does not declare sum_of_weights semantics")
        if profile.max_group_size <= 0 or profile.size <= 0:
            raise ProgramError(f"{WCMP_SELECTOR}: max_group_size and size must be positive, got "
                               f"{profile.max_group_size} and {profile.size}")
        return GroupBudget(int(profile.max_group_size), int(profile.size))


def with_budget(p4info: p4info_pb2.P4Info, budget: GroupBudget) -> p4info_pb2.P4Info:
    """A copy of ``p4info`` whose WCMP selector declares ``budget`` (a device's own P4Info)."""
    out = p4info_pb2.P4Info()
    out.CopyFrom(p4info)
    for profile in out.action_profiles:
        if profile.preamble.alias == WCMP_SELECTOR:
            profile.max_group_size = budget.max_group_weight
            profile.size = budget.total_weight
    return out
