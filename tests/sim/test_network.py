"""The simulated network: grudges, in-flight drops, link profiles, calls with three outcomes."""

import pytest
import trio

from chaoskube.sim import Failed, LinkProfile, Ok, Unknown, World


async def sink(process):
    await trio.sleep_forever()


def deliveries(world, src, dst):
    return [
        event
        for event in world.journal.events
        if event["type"] == "deliver" and event["src"] == src and event["dst"] == dst
    ]


def drops(world, reason=None):
    return [e for e in world.journal.events if e["type"] == "drop" and (reason is None or e["reason"] == reason)]


def make_world(seed=1, **link):
    from chaoskube.sim import Journal

    return World(seed, journal=Journal(None, retain_network=True), link=LinkProfile(**link) if link else None)


def test_symmetric_partition_drops_both_ways_and_heal_restores():
    world = make_world()

    async def main(world):
        for name in "ab":
            world.spawn(name, sink)
        world.network.partition({"a": {"b"}, "b": {"a"}})
        world.process("a").send("b", "x")
        world.process("b").send("a", "y")
        await world.sleep(1)
        world.network.heal()
        world.network.heal()  # idempotent
        world.process("a").send("b", "z")
        await world.sleep(1)

    world.run(main)
    assert len(drops(world, "partition")) == 2
    assert len(deliveries(world, "a", "b")) == 1
    assert len(deliveries(world, "b", "a")) == 0


def test_asymmetric_grudge_drops_one_direction_only():
    world = make_world()

    async def main(world):
        for name in "ab":
            world.spawn(name, sink)
        world.network.partition({"b": {"a"}})  # b drops what a sends; a still hears b
        world.process("a").send("b", "x")
        world.process("b").send("a", "y")
        await world.sleep(1)

    world.run(main)
    assert deliveries(world, "a", "b") == []
    assert len(deliveries(world, "b", "a")) == 1


def test_message_in_flight_when_link_is_cut_is_dropped_at_delivery():
    world = make_world(delay_s=1.0, jitter_s=0.0)

    async def main(world):
        for name in "ab":
            world.spawn(name, sink)
        world.process("a").send("b", "x")  # due at t=1
        await world.sleep(0.5)
        world.network.partition({"b": {"a"}})  # cut while in flight
        await world.sleep(1)

    world.run(main)
    [drop] = drops(world)
    assert drop["reason"] == "partition" and drop["t"] == 1.0
    assert deliveries(world, "a", "b") == []


def test_links_are_fifo_unless_reordered():
    def order(reorder):
        world = make_world(seed=3, delay_s=0.001, jitter_s=0.01, reorder=reorder)
        got = []

        async def receiver(process):
            while True:
                got.append((await process.receive()).body)

        async def main(world):
            world.spawn("b", receiver)
            sender = world.spawn("a", sink)
            for i in range(200):
                sender.send("b", i)
            await world.sleep(2)

        world.run(main)
        return got

    assert order(0.0) == list(range(200))
    reordered = order(0.5)
    assert sorted(reordered) == list(range(200)) and reordered != list(range(200))


def test_loss_and_duplication_follow_their_probabilities():
    world = make_world(seed=9, loss=0.3, duplicate=0.2)

    async def main(world):
        world.spawn("b", sink)
        sender = world.spawn("a", sink)
        for i in range(2000):
            sender.send("b", i)
        await world.sleep(1)

    world.run(main)
    lost = len(drops(world, "loss"))
    delivered = len(deliveries(world, "a", "b"))
    assert 0.25 < lost / 2000 < 0.35
    assert delivered == pytest.approx((2000 - lost) * 1.2, rel=0.06)


def test_per_link_profile_overrides_default_with_wildcards():
    world = make_world(delay_s=0.001, jitter_s=0.0)
    slow = LinkProfile(delay_s=0.5, jitter_s=0.0)
    world.network.set_link("*", "c", slow)
    assert world.network.link("a", "c") is slow
    assert world.network.link("a", "b").delay_s == 0.001
    exact = LinkProfile(delay_s=0.1, jitter_s=0.0)
    world.network.set_link("a", "c", exact)
    assert world.network.link("a", "c") is exact
    world.network.set_link("a", "c", None)
    assert world.network.link("a", "c") is slow


@pytest.mark.parametrize(
    "bad",
    [dict(loss=1.5), dict(delay_s=-1), dict(distribution="pareto"), dict(jitter_s=float("inf"))],
)
def test_bad_link_profiles_are_refused(bad):
    with pytest.raises(ValueError):
        LinkProfile(**bad)


async def echo_server(process):
    while True:
        request = await process.receive()
        if request.body == "boom":
            process.reply(request, "server error", ok=False)
        else:
            process.reply(request, ("echo", request.body))


def call_outcomes(prepare):
    results = []

    async def client(process):
        for body in ("hello", "boom"):
            results.append(await process.call("server", body, timeout_s=1.0))

    async def main(world):
        world.spawn("server", echo_server)
        await world.sleep(0.1)
        prepare(world)
        world.spawn("client", client)
        await world.sleep(5)

    make_world().run(main)
    return results


def test_call_ok_and_server_error_is_failed():
    ok, error = call_outcomes(lambda world: None)
    assert ok == Ok(("echo", "hello"))
    assert isinstance(error, Failed) and error.reason == "server error"


def test_call_to_stopped_process_fails_fast():
    refused, _ = call_outcomes(lambda world: world.process("server").kill())
    assert isinstance(refused, Failed) and "refused" in refused.reason


def test_call_across_partition_is_unknown_after_deadline():
    timings = []

    async def client(process):
        start = process.now()
        timings.append(await process.call("server", "x", timeout_s=2.0))
        timings.append(process.now() - start)

    async def main(world):
        world.spawn("server", echo_server)
        world.network.partition({"server": {"client"}})
        world.spawn("client", client)
        await world.sleep(5)

    make_world().run(main)
    assert isinstance(timings[0], Unknown)
    assert timings[1] == pytest.approx(2.0)


def test_lost_reply_is_unknown_although_the_request_happened():
    handled = []

    async def server(process):
        while True:
            request = await process.receive()
            handled.append(request.body)
            process.world.network.partition({"client": {"server"}})  # the reply is lost
            process.reply(request, "done")

    result = []

    async def client(process):
        result.append(await process.call("server", "write", timeout_s=1.0))

    async def main(world):
        world.spawn("server", server)
        world.spawn("client", client)
        await world.sleep(3)

    make_world().run(main)
    assert handled == ["write"]
    assert isinstance(result[0], Unknown)


def test_calls_and_connection_messages_are_never_duplicated():
    world = make_world(seed=2, duplicate=1.0)
    answered = []

    async def server(process):
        while True:
            request = await process.receive()
            answered.append(request.body)
            if request.call_id:
                process.reply(request, "ok")

    async def client(process):
        for index in range(20):
            await process.call("server", index, timeout_s=1)
        for index in range(20):
            process.send("server", ("stream", index), duplicable=False)

    async def main(world):
        world.spawn("server", server)
        world.spawn("client", client)
        await world.sleep(5)

    world.run(main)
    assert answered[:20] == list(range(20))
    assert len(answered) == 40  # neither the requests nor the stream messages doubled


def test_network_events_written_encoded_are_the_bytes_of_the_event_dicts(tmp_path):
    """Send and deliver events are written pre-encoded (World.record_send/record_deliver)
    unless network events are retained as dicts: the two journals are byte-identical."""
    from chaoskube.sim import Journal

    async def echo(process):
        while True:
            request = await process.receive()
            if request.call_id:
                process.reply(request, {"type": "Pong", "n": request.body})

    async def main(world):
        world.spawn("srv-\u00e9\"1", echo)  # a name JSON must escape
        caller = world.spawn("cli", sink)
        for index in range(30):
            caller.send("srv-\u00e9\"1", index, port="p\\q")
            await world.sleep(0.0001 * index)  # instants whose times print many digits
        await world.sleep(0.1 + 1e-7)

    paths = []
    for retain in (False, True):
        path = tmp_path / f"journal-{retain}.jsonl"
        World(3, journal=Journal(path, retain_network=retain), link=LinkProfile(delay_s=0.000123, jitter_s=0.01)).run(main)
        paths.append(path.read_bytes())
    assert paths[0].count(b'"type":"send"') == 30
    assert paths[0].count(b'"type":"deliver"') == 30
    assert paths[0] == paths[1]


@pytest.mark.parametrize("tcp", [False, True])
def test_a_tcp_call_is_retransmitted_across_a_partition_and_others_are_lost(tcp):
    # a call on a TCP connection (the HTTPS front's) is retransmitted at 0.2 s doubling
    # until the 2 s partition heals (the one at 3.0 s gets through); any other is dropped
    results = []

    async def client(process):
        start = process.now()
        results.append((await process.call("server", "hello", timeout_s=10.0, tcp=tcp), process.now() - start))

    async def main(world):
        world.spawn("server", echo_server)
        world.network.partition({"server": {"client"}})
        world.call_later(2.0, lambda _: world.network.heal())
        world.spawn("client", client)
        await world.sleep(12)

    world = make_world()
    world.run(main)
    ((outcome, elapsed),) = results
    retransmits = [event["after_s"] for event in world.journal.events if event["type"] == "retransmit"]
    if tcp:
        assert outcome == Ok(("echo", "hello")) and 3.0 < elapsed < 3.1
        assert retransmits == pytest.approx([0.2, 0.6, 1.4, 3.0]) and not drops(world)
        assert not world.network.tcp_calls
    else:
        assert isinstance(outcome, Unknown) and elapsed == pytest.approx(10.0)
        assert not retransmits and len(drops(world, "partition")) == 1


def test_a_tcp_calls_message_is_given_up_at_the_first_retransmission_after_its_call_ended():
    # the request is cut from the start; the call's 1 s deadline passes between the
    # retransmissions at 0.6 and 1.4 s: the one at 1.4 s finds the link still cut and drops
    # it (nobody waits for it), with no retransmission after
    results = []

    async def client(process):
        results.append(await process.call("server", "hello", timeout_s=1.0, tcp=True))

    async def main(world):
        world.spawn("server", echo_server)
        world.network.partition({"server": {"client"}})
        world.spawn("client", client)
        await world.sleep(5)

    world = make_world()
    world.run(main)
    assert isinstance(results[0], Unknown)
    assert [event["after_s"] for event in world.journal.events if event["type"] == "retransmit"] == pytest.approx([0.2, 0.6, 1.4])
    (drop,) = drops(world, "partition")
    assert drop["t"] == pytest.approx(1.4, abs=0.01) and not world.network.tcp_calls


@pytest.mark.parametrize("opened", [False, True])
def test_a_tcp_stream_holds_its_messages_in_order_across_a_partition(opened):
    # a stream on a TCP connection (the HTTPS front's watch streams): message 1 is in flight
    # (1 s link) when the partition starts, 2 is sent during it, 3 after the heal but before
    # the retransmission that finds the link whole (0.2, 0.6, 1.4, 3.0 s after the first cut):
    # all three arrive after it, in the order sent; unopened, 1 and 2 are lost
    received = []

    async def main(world):
        world.spawn("server", sink)
        client = world.spawn("client", sink)
        client.on_message("w", lambda message: received.append((message.body, round(world.now, 6))))
        world.network.set_link("server", "client", LinkProfile(delay_s=1.0))
        if opened:
            world.network.open_tcp_stream("s")
        server = world.process("server")
        server.send("client", 1, port="w", stream="s")
        await world.sleep(0.5)
        world.network.partition({"client": {"server"}})
        await world.sleep(0.5)
        server.send("client", 2, port="w", stream="s")
        await world.sleep(1.5)
        world.network.heal()  # at 2.5 s
        server.send("client", 3, port="w", stream="s")
        await world.sleep(10)

    world = make_world()
    world.run(main)
    retransmits = [event["after_s"] for event in world.journal.events if event["type"] == "retransmit"]
    if opened:
        # the first cut at 1.0 s (message 1, due then): retransmissions at 1.2, 1.6, 2.4, 4.0 s
        assert received == [(1, 5.0), (2, 5.0), (3, 5.0)], received
        assert retransmits == pytest.approx([0.2, 0.6, 1.4, 3.0]) and not drops(world)
    else:
        assert [body for body, _ in received] == [3] and received[0][1] == pytest.approx(3.5, abs=0.001) and not retransmits and len(drops(world, "partition")) == 2


def test_a_tcp_stream_is_reset_when_a_partition_outlasts_its_bound():
    resets = []

    async def main(world):
        world.spawn("server", sink)
        client = world.spawn("client", sink)
        client.on_message("w", lambda message: resets.append(("received", message.body)))
        world.network.open_tcp_stream("s", bound_s=40.0, on_reset=lambda: resets.append(("reset", world.now)))
        world.network.partition({"client": {"server"}})
        world.process("server").send("client", 1, port="w", stream="s")
        world.process("server").send("client", 2, port="w", stream="s")
        await world.sleep(60)
        world.network.heal()
        world.process("server").send("client", 3, port="w", stream="s")
        await world.sleep(1)

    world = make_world()
    world.run(main)
    # reset at the bound, what it held lost with it; the stream closed, 3 travels as any message
    assert resets == [("reset", pytest.approx(40.0)), ("received", 3)]
    (reset,) = [event for event in world.journal.events if event["type"] == "tcp-reset"]
    assert reset["after_s"] == pytest.approx(40.0) and reset["lost"] == 2
    assert len(drops(world, "partition")) == 2 and "s" not in world.network.tcp_streams
