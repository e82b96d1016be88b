"""The rate-limited work queue: table tests of the pure core, the back-off sequences, and a
Hypothesis test of several workers on the simulated runtime."""

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaoskube.client.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    Queue,
    QueueEmpty,
    QueueFull,
    QueueShutDown,
    RateLimitingQueue,
    default_controller_rate_limiter,
)
from chaoskube.sim import World


# -- the pure core: scripts of steps and the expected result ----------------------------------
def play(script, capacity=100):
    """Run a script of (operation, item) on a fresh queue; return what each step gave."""
    queue = Queue(capacity)
    results = []
    for operation, *argument in script:
        try:
            results.append(getattr(queue, operation)(*argument))
        except (QueueEmpty, QueueShutDown, QueueFull) as error:
            results.append(type(error).__name__)
        queue.check_invariants()
    return queue, results


@pytest.mark.parametrize(
    ("name", "script", "expected"),
    [
        ("FIFO", [("add", "a"), ("add", "b"), ("add", "c"), ("get",), ("get",), ("get",)], [True, True, True, "a", "b", "c"]),
        ("an item is queued once", [("add", "a"), ("add", "b"), ("add", "a"), ("get",), ("get",), ("get",)], [True, True, False, "a", "b", "QueueEmpty"]),
        (
            "add while processing marks dirty, queued again only on done",
            [("add", "a"), ("get",), ("add", "a"), ("get",), ("done", "a"), ("get",)],
            [True, "a", False, "QueueEmpty", True, "a"],
        ),
        (
            "re-added item goes to the back",
            [("add", "a"), ("add", "b"), ("get",), ("add", "a"), ("done", "a"), ("get",), ("get",)],
            [True, True, "a", False, True, "b", "a"],
        ),
        ("done without re-add does not requeue", [("add", "a"), ("get",), ("done", "a"), ("get",)], [True, "a", False, "QueueEmpty"]),
        (
            "shut down: adds ignored, queued items drained, then ShutDown",
            [("add", "a"), ("shut_down",), ("add", "b"), ("get",), ("get",)],
            [True, None, False, "a", "QueueShutDown"],
        ),
        ("capacity bounds distinct items", [("add", "a"), ("add", "b"), ("add", "c"), ("add", "a")], [True, True, "QueueFull", False]),
        (
            "a known item is accepted at the bound",
            [("add", "a"), ("add", "b"), ("get",), ("add", "a"), ("done", "a"), ("get",)],
            [True, True, "a", False, True, "b"],
        ),
    ],
)
def test_queue_scripts(name, script, expected):
    _, results = play(script, capacity=2 if "capacity" in name or "bound" in name else 100)
    assert results == expected, name


def test_get_never_hands_out_an_item_being_processed():
    queue = Queue()
    queue.add("a")
    assert queue.get() == "a"
    for _ in range(3):
        queue.add("a")  # dirty, not queued
        with pytest.raises(QueueEmpty):
            queue.get()
    assert queue.is_dirty("a") and queue.is_processing("a")
    assert queue.done("a") is True
    assert queue.get() == "a"


def test_done_of_an_item_not_processed_is_a_programmer_error():
    with pytest.raises(AssertionError, match="not being processed"):
        Queue().done("a")


def test_delayed_add_keeps_the_earlier_entry_and_releases_when_due():
    queue = Queue()
    assert queue.add_after("a", 10.0, now=0.0) == 10.0
    assert queue.add_after("a", 12.0, now=0.0) is None  # later: the earlier entry stays
    assert queue.add_after("a", 5.0, now=0.0) == 5.0  # earlier: replaces it
    assert queue.next_ready_at() == 5.0
    assert queue.release_due(4.9) == 0
    assert queue.release_due(5.0) == 1
    assert queue.get() == "a"
    assert queue.release("a", 10.0) is False  # the superseded timer does nothing
    assert queue.add_after("b", 0.0, now=3.0) is None and queue.get() == "b"  # no delay: at once
    queue.check_invariants()


def test_delayed_entries_count_towards_the_bound_and_are_dropped_on_shut_down():
    queue = Queue(capacity=1)
    queue.add_after("a", 1.0, now=0.0)
    with pytest.raises(QueueFull):
        queue.add("b")
    queue.shut_down()
    assert queue.release_due(2.0) == 0 and queue.waiting() == 0


# -- rate limiters ------------------------------------------------------------------------------
def test_exponential_back_off_5ms_doubling_capped_at_1000s():
    limiter = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("a") for _ in range(25)]
    assert delays[:5] == pytest.approx([0.005, 0.010, 0.020, 0.040, 0.080])
    assert delays[17] == pytest.approx(0.005 * 2**17)  # 655.36 s
    assert delays[18:] == [1000.0] * 7
    assert limiter.num_requeues("a") == 25
    assert limiter.when("b") == 0.005  # per item
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0 and limiter.when("a") == 0.005


def test_exponential_back_off_does_not_overflow():
    limiter = ItemExponentialFailureRateLimiter(1.0, 1e308)
    for _ in range(2000):
        delay = limiter.when("a")
    assert delay == 2.0**64


def test_exponential_limiter_is_bounded():
    limiter = ItemExponentialFailureRateLimiter(capacity=2)
    limiter.when("a")
    limiter.when("b")
    with pytest.raises(QueueFull, match="forget"):
        limiter.when("c")
    limiter.forget("a")
    assert limiter.when("c") == 0.005


def test_bucket_burst_then_qps():
    bucket = BucketRateLimiter(qps=10, burst=100)
    delays = [bucket.when(i, now=0.0) for i in range(103)]
    assert delays[:100] == [0.0] * 100
    assert delays[100:] == pytest.approx([0.1, 0.2, 0.3])
    assert bucket.when("x", now=10.0) == 0.0  # refilled (less the debt)
    assert bucket.num_requeues("x") == 0


def test_bucket_backwards_clock_refills_nothing():
    bucket = BucketRateLimiter(qps=1, burst=1)
    assert bucket.when("a", now=100.0) == 0.0
    assert bucket.when("a", now=50.0) == pytest.approx(1.0)


def test_default_controller_limiter_is_the_max_of_both():
    limiter = default_controller_rate_limiter()
    assert isinstance(limiter, MaxOfRateLimiter)
    assert limiter.when("a", 0.0) == 0.005  # bucket full: the per-item back-off wins
    for i in range(120):
        limiter.when(f"k{i}", 0.0)
    # the bucket is in debt now: its wait beats a fresh item's 5 ms
    assert limiter.when("fresh", 0.0) > 1.0
    assert limiter.num_requeues("a") == 1
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


# -- the Trio shell on the simulated runtime ---------------------------------------------------
def test_rate_limited_requeue_waits_the_back_off_in_process_time():
    got = []

    async def controller(process):
        queue = RateLimitingQueue(process, ItemExponentialFailureRateLimiter(1.0, 8.0))
        queue.add("key")
        for _ in range(6):
            item = await queue.get()
            got.append(process.now())
            queue.add_rate_limited(item)  # fail every time
            queue.done(item)
        await trio.sleep_forever()

    async def main(world):
        world.spawn("controller", controller)
        await world.sleep(60)

    World(1).run(main)
    assert [b - a for a, b in zip(got, got[1:])] == pytest.approx([1.0, 2.0, 4.0, 8.0, 8.0])


def test_delays_stop_while_the_process_is_paused():
    got = []

    async def controller(process):
        queue = RateLimitingQueue(process)
        queue.add_after("key", 5.0)
        got.append(await queue.get())
        got.append(process.world.now)

    async def main(world):
        process = world.spawn("controller", controller)
        await world.sleep(1)
        process.pause()
        await world.sleep(10)
        process.resume()
        await world.sleep(1)

    World(1).run(main)
    assert got == ["key", 11.0]


def test_shut_down_wakes_every_waiting_worker():
    ended = []

    async def controller(process):
        queue = RateLimitingQueue(process)

        async def worker(name):
            try:
                await queue.get()
            except QueueShutDown:
                ended.append(name)

        for name in ("w1", "w2", "w3"):
            process.start_soon(worker, name)
        await process.sleep(1)
        queue.shut_down()
        await trio.sleep_forever()

    async def main(world):
        world.spawn("controller", controller)
        await world.sleep(2)

    World(1).run(main)
    assert sorted(ended) == ["w1", "w2", "w3"]


# -- Hypothesis: several workers, adds at random times, failures with back-off -----------------
operations = st.lists(
    st.tuples(
        st.floats(min_value=0.0, max_value=2.0),  # wait before this add (s)
        st.integers(min_value=0, max_value=5),  # which key
        st.integers(min_value=0, max_value=3),  # how many times processing it fails
    ),
    min_size=1,
    max_size=40,
)


def run_workers(seed, workers, adds, work_s, core=Queue):
    """Workers on one process take keys, work for a while, fail a given number of times
    (re-added with back-off), then succeed. Returns (violations, unprocessed adds)."""
    holders = {}  # key -> worker processing it now
    log = []  # (event, key, time)
    failures_left = {}
    violations = []

    async def controller(process):
        queue = RateLimitingQueue(process, ItemExponentialFailureRateLimiter(0.005, 0.5))
        queue.core = core()
        rng = process.random("work")

        async def worker(name):
            while True:
                try:
                    key = await queue.get()
                except QueueShutDown:
                    return
                if key in holders:
                    violations.append((key, holders[key], name, process.now()))
                holders[key] = name
                log.append(("begin", key, process.now()))
                await process.sleep(rng.choice(work_s))
                holders.pop(key, None)
                if failures_left.get(key, 0) > 0:
                    failures_left[key] -= 1
                    queue.add_rate_limited(key)
                else:
                    queue.forget(key)
                queue.done(key)

        for index in range(workers):
            process.start_soon(worker, f"w{index}")
        for wait_s, key, failures in adds:
            await process.sleep(wait_s)
            failures_left[key] = failures_left.get(key, 0) + failures
            log.append(("add", key, process.now()))
            queue.add(key)
        await trio.sleep_forever()

    async def main(world):
        world.spawn("controller", controller)
        await world.sleep(sum(wait for wait, _, _ in adds) + 200)

    World(seed).run(main)
    # every add must be followed (in the log) by a processing that began after it
    last_begin = {}
    for index, (event, key, _) in enumerate(log):
        if event == "begin":
            last_begin[key] = index
    unprocessed = [(key, t) for index, (event, key, t) in enumerate(log) if event == "add" and last_begin.get(key, -1) <= index]
    return violations, unprocessed


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(min_value=0, max_value=2**32),
    workers=st.integers(min_value=1, max_value=5),
    adds=operations,
    work_s=st.lists(st.floats(min_value=0.0, max_value=0.5), min_size=1, max_size=8),
)
def test_workers_never_share_an_item_and_every_add_is_processed(seed, workers, adds, work_s):
    violations, unprocessed = run_workers(seed, workers, adds, work_s)
    assert not violations, f"an item was processed by two workers at once: {violations[0]}"
    assert not unprocessed, f"added but never processed afterwards: {unprocessed[0]}"


class QueueThatRequeuesWhileProcessing(Queue):
    """Broken on purpose: an add of an item being processed queues it at once."""

    def add(self, item):
        if self._shutting_down or item in self._queue:
            return False
        self._dirty.add(item)
        self._queue.append(item)
        return True

    def get(self):
        if not self._queue:
            raise QueueShutDown("shut down") if self._shutting_down else QueueEmpty("empty")
        item = self._queue.popleft()  # without the core's own assertions
        self._dirty.discard(item)
        self._processing.add(item)
        return item

    def done(self, item):
        self._processing.discard(item)
        return False


class QueueThatForgetsDirtyItems(Queue):
    """Broken on purpose: done() drops an item that was added again meanwhile."""

    def done(self, item):
        self._processing.discard(item)
        self._dirty.discard(item)
        return False


def test_the_property_catches_broken_queues():
    adds = [(0.0, 1, 0), (0.01, 1, 0)]  # the second add lands while the first is processed
    violations, _ = run_workers(1, 2, adds, [0.1], core=QueueThatRequeuesWhileProcessing)
    assert violations and violations[0][0] == 1
    _, unprocessed = run_workers(1, 2, adds, [0.1], core=QueueThatForgetsDirtyItems)
    assert unprocessed == [(1, 0.01)]
    assert run_workers(1, 2, adds, [0.1]) == ([], [])
