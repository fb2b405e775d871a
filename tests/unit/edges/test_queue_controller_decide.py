"""The queue-controller answers each request with a fact or a rejection naming the field."""

from muster.events import (
    DeleteQueue,
    QueueDeleted,
    QueueRejected,
    QueueResource,
    QueueSpec,
    QueueUpserted,
    UpsertQueue,
)
from muster.queues.decide import decide, evolve


def book_of(*queues):
    book = {}
    for q in queues:
        book = evolve(book, decide(book, UpsertQueue(queue=q)))
    return book


def test_a_valid_queue_is_upserted_with_the_next_creation_order():
    book = book_of(QueueSpec(name="a"))
    answer = decide(book, UpsertQueue(queue=QueueSpec(name="b")))
    assert isinstance(answer, QueueUpserted) and answer.queue.order == 1


def test_an_update_keeps_the_queue_creation_order():
    book = book_of(QueueSpec(name="a"), QueueSpec(name="b"))
    answer = decide(book, UpsertQueue(queue=QueueSpec(name="a", priority=7)))
    assert answer.queue.order == 0 and answer.queue.priority == 7


def test_an_unknown_parent_is_rejected_naming_the_parent_field():
    answer = decide({}, UpsertQueue(queue=QueueSpec(name="a", parent="nowhere")))
    assert isinstance(answer, QueueRejected)
    assert answer.field == "parent" and "nowhere" in answer.error


def test_a_parent_change_that_closes_a_cycle_is_rejected():
    book = book_of(QueueSpec(name="a"), QueueSpec(name="b", parent="a"))
    answer = decide(book, UpsertQueue(queue=QueueSpec(name="a", parent="b")))
    assert isinstance(answer, QueueRejected) and answer.field == "parent" and "loops" in answer.error


def test_a_negative_quota_other_than_minus_one_is_rejected_naming_the_resource():
    q = QueueSpec(name="a", resources={"gpu": QueueResource(quota=-3)})
    answer = decide({}, UpsertQueue(queue=q))
    assert isinstance(answer, QueueRejected) and answer.field == "resources.gpu.quota"


def test_an_existing_invalid_queue_does_not_block_valid_requests():
    book = {"bad": QueueSpec(name="bad", parent="gone")}
    assert isinstance(decide(book, UpsertQueue(queue=QueueSpec(name="fine"))), QueueUpserted)


def test_a_queue_with_children_cannot_be_deleted():
    book = book_of(QueueSpec(name="a"), QueueSpec(name="b", parent="a"))
    answer = decide(book, DeleteQueue(name="a"))
    assert isinstance(answer, QueueRejected) and "b" in answer.error


def test_a_leaf_queue_is_deleted():
    book = book_of(QueueSpec(name="a"), QueueSpec(name="b", parent="a"))
    assert decide(book, DeleteQueue(name="b")) == QueueDeleted(name="b")
