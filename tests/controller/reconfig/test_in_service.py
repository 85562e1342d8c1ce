"""The planning view ToE uses under maintenance (controller.reconfig.in_service)."""

from __future__ import annotations

from controller.reconfig.in_service import planning_view
from optimizer.fabric import Fabric
from optimizer.spine import spine_in_service, spine_links
from optimizer.topology import uniform_mesh
from optimizer.traffic import uniform_matrix


def test_an_ocs_and_a_block_under_maintenance_are_frozen_out(hybrid8: Fabric) -> None:
    mesh = frozenset(uniform_mesh(hybrid8))
    spine = spine_in_service(hybrid8, spine_links(hybrid8), out=["s2"])
    view = planning_view(hybrid8, mesh, ocs_out=["ocs1"], blocks_out=["b3"], spine=spine)
    frozen = {c for c in mesh if c.ocs == "ocs1" or "b3" in c.blocks(hybrid8)}
    assert view.frozen == frozen and view.current(mesh) == mesh - frozen
    assert [o.name for o in view.fabric.ocs] == ["ocs2", "ocs3", "ocs4"]
    # 32 uplinks striped over 4 OCSes: 8 ports each; b3 keeps none, and the far ends of b3's
    # circuits on ocs2-4 are taken
    taken = {b: 0 for b in hybrid8.block_names}
    for c in frozen:
        if c.ocs != "ocs1":
            for b in c.blocks(hybrid8):
                taken[b] += 1
    assert {b.name: b.uplinks for b in view.fabric.blocks} == {
        **{f"b{i}": 24 - taken[f"b{i}"] for i in range(1, 9)}, "b3": 0
    }
    assert all(w.ocs != "ocs1" and w.block != "b3" for w in view.fabric.wiring)
    # a plan on the view can only use ports no frozen circuit holds
    held = {(c.ocs, p) for c in frozen for p in (c.a, c.b)}
    assert not held & {(w.ocs, w.port) for w in view.fabric.wiring}
    assert [s.name for s in view.fabric.spine] == ["s1"]
    # the circuits left are all wired in the view, on the same ports
    for c in view.current(mesh):
        assert c.blocks(view.fabric) == c.blocks(hybrid8)
    tm = view.demand(uniform_matrix(hybrid8, 0.5))
    i = hybrid8.block_index("b3")
    assert tm.gbps[i].sum() == 0 and tm.gbps[:, i].sum() == 0 and tm.total() > 0


def test_replay_routing_counts_spine_next_hops(hybrid8: Fabric) -> None:
    """Groups naming a spine switch (TE's on a hybrid fabric) load its trunks both ways."""
    import numpy as np

    from controller.replay.routing import routed_loads, trunk_members

    mesh = frozenset(uniform_mesh(hybrid8))
    members = trunk_members(hybrid8, mesh)
    demand = np.zeros((8, 8))
    demand[0, 1] = 300.0
    loads = routed_loads(hybrid8, {"b1": {"b2": {"b2": 1, "s1": 2}}}, demand, members)
    s1 = 8  # nodes: the blocks, then s1, s2
    assert loads.load[0, s1] == 200.0 and loads.load[s1, 1] == 200.0 and loads.load[0, 1] == 100.0
    assert loads.capacity[0, s1] == loads.capacity[s1, 1] == 400.0
    assert loads.mlu() == 0.5
