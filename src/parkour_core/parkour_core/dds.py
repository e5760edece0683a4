"""The robot's DDS link (Cyclone DDS, like the robots), configured the Unitree SDK's way.

``ChannelFactoryInitialize`` sets up the domain with the SDK's own XML (it ignores
CYCLONEDDS_URI); we then open keep-last-1 readers and take only the newest sample, so a slow
reader never works through a backlog of stale states.

Readers and writers carry either the SDK's IDL objects (``take_latest``, ``write``) or the
serialized bytes (``take_latest_bytes``, ``write_bytes``) that :mod:`parkour_core.unitree_wire`
encodes and decodes: the same samples on the wire, without cyclonedds' per-field Python serializer.
"""

from __future__ import annotations

import time
from typing import Any


class DdsLink:
    def __init__(self, domain: int, interface: str | None) -> None:
        from cyclonedds.domain import DomainParticipant
        from unitree_sdk2py.core.channel import ChannelFactoryInitialize

        ChannelFactoryInitialize(domain, interface)
        self.domain = domain
        self.participant = DomainParticipant(domain)
        self._topics: dict[str, Any] = {}

    def _topic(self, name: str, msg_type: type) -> Any:
        from cyclonedds.topic import Topic

        if name not in self._topics:
            self._topics[name] = Topic(self.participant, name, msg_type)
        return self._topics[name]

    def reader(self, name: str, msg_type: type) -> LatestReader:
        from cyclonedds.core import Policy, Qos
        from cyclonedds.sub import DataReader

        qos = Qos(Policy.History.KeepLast(1), Policy.Reliability.BestEffort)
        return LatestReader(DataReader(self.participant, self._topic(name, msg_type), qos=qos))

    def writer(self, name: str, msg_type: type) -> LatestWriter:
        from cyclonedds.core import Policy, Qos
        from cyclonedds.pub import DataWriter

        qos = Qos(Policy.History.KeepLast(1), Policy.Reliability.BestEffort)
        return LatestWriter(DataWriter(self.participant, self._topic(name, msg_type), qos=qos))

    def count_writers(self, name: str, wait_s: float) -> int:
        """Writers of topic ``name`` other than our own, seen within ``wait_s`` of discovery."""
        from cyclonedds.builtin import BuiltinDataReader, BuiltinTopicDcpsPublication

        reader = BuiltinDataReader(self.participant, BuiltinTopicDcpsPublication)
        own = str(self.participant.guid)
        seen: set[str] = set()
        deadline = time.monotonic() + wait_s
        while True:
            for s in reader.take(N=64):
                if getattr(s, "topic_name", None) == name and str(s.participant_key) != own:
                    seen.add(str(s.key))
            if time.monotonic() >= deadline:
                return len(seen)
            time.sleep(0.02)


_DDSC: Any = None


def _ddsc() -> Any:
    """The Cyclone DDS C library cyclonedds-python loaded (for calls it does not wrap)."""
    global _DDSC
    if _DDSC is None:
        from cyclonedds.internal import load_cyclonedds

        _DDSC = load_cyclonedds()
    return _DDSC


class LatestReader:
    def __init__(self, reader: Any) -> None:
        self._reader = reader

    def take_latest(self) -> Any | None:
        """The newest valid sample since the last call, or None."""
        samples = self._reader.take(N=8)
        for s in reversed(samples):
            if type(s).__name__ != "InvalidSample":
                return s
        return None

    def take_latest_bytes(self) -> bytes | None:
        """The newest valid sample since the last call as its serialized bytes (header included), or None."""
        from cyclonedds._clayer import ddspy_take

        taken = ddspy_take(self._reader._ref, 8)
        if isinstance(taken, int):
            raise RuntimeError(f"DDS take failed with return code {taken}")
        for data, info in reversed(taken):
            if info.valid_data:
                return bytes(data)
        return None


class LatestWriter:
    def __init__(self, writer: Any) -> None:
        self._writer = writer

    def matched_readers(self) -> int:
        """Readers this writer has matched (Cyclone's publication-matched status): a sample written now
        goes to these. A reader that has not matched yet misses it (keep-last-1, volatile)."""
        import ctypes

        from cyclonedds.internal import dds_c_t

        status = dds_c_t.publication_matched_status()
        ret = _ddsc().dds_get_publication_matched_status(self._writer._ref, ctypes.byref(status))
        if ret < 0:
            raise RuntimeError(f"DDS publication-matched status failed with return code {ret}")
        return int(status.current_count)

    def write(self, sample: Any) -> None:
        self._writer.write(sample)

    def write_bytes(self, data: bytes) -> None:
        """A serialized sample (header included, a multiple of 4 bytes), as ``DataWriter.write`` sends it."""
        from cyclonedds._clayer import ddspy_write

        ret = ddspy_write(self._writer._ref, data)
        if ret < 0:
            raise RuntimeError(f"DDS write failed with return code {ret}")
