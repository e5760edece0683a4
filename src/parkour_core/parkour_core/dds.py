"""The robot's DDS link (Cyclone DDS, like the robots), configured the Unitree SDK's way.

``ChannelFactoryInitialize`` sets up the domain with the SDK's own XML (it ignores
CYCLONEDDS_URI); we then open keep-last-1 readers and take only the newest sample, so a slow
reader never works through a backlog of stale states.
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

    def writer(self, name: str, msg_type: type) -> Any:
        from cyclonedds.core import Policy, Qos
        from cyclonedds.pub import DataWriter

        qos = Qos(Policy.History.KeepLast(1), Policy.Reliability.BestEffort)
        return DataWriter(self.participant, self._topic(name, msg_type), qos=qos)

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
