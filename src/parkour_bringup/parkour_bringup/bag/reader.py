"""Open a stack bag and read it, refusing bad input with one clear line (``BagError``).

A bag is a rosbag2 folder (``metadata.yaml`` + storage files). Refused: a path that is not such a
folder, a recording that never closed (no ``metadata.yaml``), a corrupt or truncated storage file
(said where: after how many messages and how far into the recording; a byte changed inside a message,
which the storage's records cannot show, by the SHA-256 the recorder wrote at close), a bag of another
robot, and missing topics a replay needs. The storage reader's own exception text (a C conversion error, a bad
CRC) is not the user's business: the line says what is damaged and where. Messages decode with
ROS 2 Kilted's types and the stack's own (:mod:`parkour_bringup.bag.typestore`); a bag recorded before
the stack had its own types opens the same way (:mod:`parkour_bringup.bag.messages` reads both kinds),
and one of the stack's types recorded with an earlier definition decodes with the definition recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parkour_bringup.bag.topics import root_name
from parkour_core.hashing import sha256_file


class BagError(Exception):
    """A bag that cannot be used, with the reason and what to do about it."""


@dataclass
class BagMessage:
    topic: str
    log_time_ns: int  # receive time when recorded
    msg: Any  # rosbags message dataclass
    msgtype: str = ""  # its ROS 2 type name: a topic's type changed when the stack got its own messages


class StackBag:
    """A validated, opened bag. Use as a context manager. Topics go by their root names
    (``/policy/joint_targets``), whatever namespace the bag was recorded under (``namespace``)."""

    def __init__(self, path: Path) -> None:
        import yaml
        from rosbags.rosbag2 import Reader

        from parkour_bringup.bag.typestore import recorded_typestore, stack_typestore

        self.path = Path(path)
        if not self.path.exists():
            raise BagError(f"{self.path} does not exist")
        if not self.path.is_dir():
            raise BagError(f"{self.path} is not a bag folder (a rosbag2 bag is a folder with metadata.yaml)")
        if not (self.path / "metadata.yaml").is_file():
            raise BagError(
                f"{self.path} has no metadata.yaml: the recording did not finish cleanly "
                "(recorder killed?) or this is not a rosbag2 folder"
            )
        self._typestore = stack_typestore()
        try:
            self._reader = Reader(self.path)
            self._reader.open()
        except Exception as e:  # rosbags raises its own errors for bad metadata and unreadable storage
            raise BagError(
                f"{self.path} cannot be opened (truncated or corrupt storage, or bad metadata): {e}"
            ) from None
        # rosbags parses custom_data but does not expose it on Reader: read it from the file it opened.
        info = (yaml.safe_load((self.path / "metadata.yaml").read_text()) or {}).get("rosbag2_bagfile_information", {})
        self.custom_data: dict[str, str] = {str(k): str(v) for k, v in (info.get("custom_data") or {}).items()}
        # Topics by their root names, whatever namespace recorded them (a bag without one: the root).
        self.namespace = self.custom_data.get("namespace", "/")
        self._names = {c.topic: root_name(c.topic, self.namespace) for c in self._reader.connections}
        # Per connection, the typestore its messages decode with: today's, or the definition it recorded.
        self._typestores: dict[int, Any] = {}
        for c in self._reader.connections:
            recorded = recorded_typestore(c.msgtype, c.msgdef.data, self._typestore)
            self._typestores[c.id] = recorded if recorded is not None else self._typestore
        self.topics: dict[str, int] = {name: 0 for name in self._names.values()}
        for c in self._reader.connections:
            self.topics[self._names[c.topic]] += c.msgcount

    def __enter__(self) -> StackBag:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._reader.close()

    @property
    def robot(self) -> str | None:
        return self.custom_data.get("robot")

    def require_robot(self, robot: str) -> None:
        if self.robot is None:
            raise BagError(f"{self.path} does not say which robot it recorded (no 'robot' in its custom_data)")
        if self.robot != robot:
            raise BagError(f"{self.path} was recorded on a {self.robot}, not a {robot}: a bag replays on its own robot")

    def require_topics(self, topics: list[str], why: str) -> None:
        missing = [t for t in topics if self.topics.get(t, 0) == 0]
        if missing:
            raise BagError(f"{self.path} has no messages on {', '.join(missing)}, which {why} needs")

    def _damaged(self, count: int, expected: int, last: tuple[str, int] | None) -> BagError:
        where = "before its first message"
        if last is not None:
            topic, log_time_ns = last
            where = f"{(log_time_ns - self._reader.start_time) / 1e9:.2f} s into the recording, after a {topic} message"
        return BagError(f"{self.path} is damaged (corrupt or truncated storage): {count} of the {expected} messages "
                        f"its metadata lists read, then unreadable data {where}")  # fmt: skip

    def messages(self, topics: list[str]) -> Iterator[BagMessage]:
        """Messages of ``topics`` in recorded order; storage that is damaged or ends early is a BagError."""
        connections = [c for c in self._reader.connections if self._names[c.topic] in topics]
        expected = sum(c.msgcount for c in connections)
        count = 0
        last: tuple[str, int] | None = None
        try:
            for connection, log_time_ns, raw in self._reader.messages(connections=connections):
                msg = self._typestores[connection.id].deserialize_cdr(raw, connection.msgtype)
                count += 1
                topic = self._names[connection.topic]
                last = (topic, log_time_ns)
                yield BagMessage(topic, log_time_ns, msg, connection.msgtype)
        except BagError:
            raise
        except Exception:  # truncated chunk, bad CRC, undecodable record: all one thing to the user
            raise self._damaged(count, expected, last) from None
        if count < expected:
            raise self._damaged(count, expected, last)

    def verify(self) -> dict[str, int]:
        """Read every message's record (not decoding it): the count per topic, or a BagError saying where the
        storage is damaged. The metadata's counts alone say nothing about the data; the recorded checksums
        (:func:`check_checksums`, after the records: those say where) catch what the records cannot."""
        counts = dict.fromkeys(self.topics, 0)
        expected = sum(self.topics.values())
        last: tuple[str, int] | None = None
        try:
            for connection, log_time_ns, _ in self._reader.messages():
                topic = self._names[connection.topic]
                counts[topic] += 1
                last = (topic, log_time_ns)
        except Exception:
            raise self._damaged(sum(counts.values()), expected, last) from None
        if counts != self.topics:
            raise self._damaged(sum(counts.values()), expected, last)
        check_checksums(self.path)
        return counts


CHECKSUMS = "checksums.sha256"  # sha256sum's format: the storage files' SHA-256, written when the bag closed


def write_checksums(bag_dir: Path) -> Path:
    """The SHA-256 of each storage file of a closed bag, beside them (rosbags' MCAP writer records no CRCs:
    without this a changed byte inside a message reads back as a different value, not as damage)."""
    files = sorted(f for f in bag_dir.iterdir() if f.is_file() and f.name not in ("metadata.yaml", CHECKSUMS))
    path = bag_dir / CHECKSUMS
    path.write_text("".join(f"{sha256_file(f)}  {f.name}\n" for f in files))
    return path


def check_checksums(bag_dir: Path) -> bool:
    """Whether the bag recorded its checksums (a bag from before they were written did not); a BagError
    names a storage file that changed since."""
    path = bag_dir / CHECKSUMS
    if not path.is_file():
        return False
    for line in path.read_text().splitlines():
        want, _, name = line.partition("  ")
        f = bag_dir / name
        got = sha256_file(f) if f.is_file() else None
        if got != want:
            now = "is missing" if got is None else f"has SHA-256 {got[:12]}..."
            raise BagError(f"{bag_dir} is damaged (changed since it was recorded): {name} {now}, the recorder wrote "
                           f"{want[:12]}... when the bag closed")  # fmt: skip
    return True


def open_bag(path: Path | str) -> StackBag:
    return StackBag(Path(path))
