"""kube-proxy's rule memo (``compute_rules(..., memo=)``) and the slice memo shared by the
proxies of all nodes: reusing a result must never change one. Each table built with a
memo is compared with the table built from scratch (the oracle: no memo)."""

from chaoskube.node import proxy as proxy_module
from chaoskube.node.proxy import compute_rules
from tests.node.test_proxy import endpoint, endpoint_slice, service


def test_memo_reuses_the_rules_of_unchanged_services_and_recomputes_changed_ones():
    web, api = service("web"), service("api")
    web_slice = endpoint_slice("web-a", "web", [endpoint("10.0.0.1"), endpoint("10.0.0.2", ready=False)])
    api_slice = endpoint_slice("api-a", "api", [endpoint("10.0.1.1")])
    memo: dict = {}
    first = compute_rules([api, web], [api_slice, web_slice], "node-1", memo=memo)
    assert first == compute_rules([api, web], [api_slice, web_slice], "node-1")
    # the same objects: the very same rules come back
    again = compute_rules([api, web], [api_slice, web_slice], "node-1", memo=memo)
    assert again[("default/web", "")] is first[("default/web", "")]
    # a new slice object for web (an informer replaces objects): web is recomputed, api is not
    web_slice_2 = endpoint_slice("web-a", "web", [endpoint("10.0.0.1"), endpoint("10.0.0.2")])
    changed = compute_rules([api, web], [api_slice, web_slice_2], "node-1", memo=memo)
    assert changed == compute_rules([api, web], [api_slice, web_slice_2], "node-1")
    assert [e.address for e in changed[("default/web", "")].endpoints] == ["10.0.0.1:8080", "10.0.0.2:8080"]
    assert changed[("default/api", "")] is first[("default/api", "")]
    # a Service that goes away leaves the table and the memo
    gone = compute_rules([web], [api_slice, web_slice_2], "node-1", memo=memo)
    assert list(gone) == [("default/web", "")] and set(memo) == {"default/web"}


def test_memo_entries_are_per_node_for_local_traffic_policy():
    local = service("web", internalTrafficPolicy="Local")
    slices = [endpoint_slice("web-a", "web", [endpoint("10.0.0.1", node="node-1"), endpoint("10.0.0.2", node="node-2")])]
    memos: dict = {"node-1": {}, "node-2": {}}
    for _ in range(2):
        for node in ("node-1", "node-2"):
            table = compute_rules([local], slices, node, memo=memos[node])
            assert table == compute_rules([local], slices, node)
    assert [e.address for e in compute_rules([local], slices, "node-2", memo=memos["node-2"])[("default/web", "")].endpoints] == ["10.0.0.2:8080"]


def test_the_shared_slice_memo_is_bounded_and_keyed_by_identity():
    proxy_module._SLICE_MEMO.clear()
    web = service("web")
    for index in range(proxy_module._SLICE_MEMO_LIMIT + 5):
        slices = [endpoint_slice("web-a", "web", [endpoint(f"10.0.{index // 250}.{index % 250 + 1}")])]
        table = compute_rules([web], slices, "node-1", memo={})
        assert [e.ip for e in table[("default/web", "")].endpoints] == [f"10.0.{index // 250}.{index % 250 + 1}"]
        assert len(proxy_module._SLICE_MEMO) <= proxy_module._SLICE_MEMO_LIMIT
