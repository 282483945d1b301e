"""The ``[satellite]`` section: ``iris satellite`` in another room, and the hub's side of it."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated

from pydantic import Field, ValidationInfo, field_validator

from iris_voice.config.sections import _Section
from iris_voice.config.serve import is_loopback_host, networks_list


class SatelliteConfig(_Section):
    """Where a satellite's hub is, what the satellite is called, how long to wait."""

    hub: str = ""
    """The hub's address, ``tcp://HOST:PORT`` (``iris satellite --hub`` overrides it)."""
    name: str = ""
    """This satellite's name, its room ("kitchen"); empty: the machine's host name."""
    token: str = ""
    """The hub's ``serve.token`` when it asks for one; sent as ``iris-auth`` on connecting.
    Empty: none."""
    connect_timeout_s: Annotated[float, Field(gt=0, le=120)] = 5.0
    """How long one attempt to reach the hub may take."""
    reply_timeout_s: Annotated[float, Field(gt=0, le=600)] = 60.0
    """How long the satellite waits for the hub's next event during a turn before giving up on it."""
    reconnect_max_s: Annotated[float, Field(gt=0, le=600)] = 30.0
    """The longest wait between attempts to reach a lost hub (the wait doubles from 1 s)."""
    hold_timers_s: Annotated[float, Field(ge=0, le=7 * 86400)] = 3600.0
    """On the hub: how long a satellite's timer that fell due while the satellite was away
    waits for it to come back (when the hub has no speaker of its own)."""

    hub_speech_jobs: Annotated[int, Field(ge=0, le=64)] = 1
    """On the hub: speech-model steps (one transcription, one sentence's synthesis) run at
    once for all satellites; 0: no bound (many cores or a GPU)."""

    connect: list[str] = []
    """On the hub: satellites to connect to, ``tcp://HOST:PORT`` each — Wyoming satellites
    that listen for their hub, as Home Assistant's do (a stock ``wyoming-satellite``, or
    ``iris satellite --listen``). The hub sends each ``run-satellite`` and answers its turns."""

    allow: list[str] = []
    """With ``listen``: hub networks let in, in CIDR; loopback always is. Empty: any
    (then ``token`` must be set for a listen address other machines can reach)."""

    listen: str = ""
    """``iris satellite``: wait for the hub here, ``tcp://HOST:PORT``, as Home Assistant's
    satellites do (the hub connects and adopts it); "" connects to ``hub`` instead."""

    @field_validator("allow")
    @classmethod
    def _allow(cls, value: list[str]) -> list[str]:
        return networks_list(value)

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: str, info: ValidationInfo) -> str:
        value = value.strip()
        if not value:
            return value
        if not re.fullmatch(r"tcp://[^\s:/]+:\d{1,5}", value):
            raise ValueError(f"must look like tcp://HOST:PORT, not {value!r}")
        host = value[len("tcp://") :].rsplit(":", 1)[0]
        if not is_loopback_host(host) and not (info.data.get("token") or info.data.get("allow")):
            raise ValueError(
                f"{value} lets any machine that reaches it hear this microphone: set satellite.allow "
                "(hub networks, e.g. ['192.168.1.0/24']) or satellite.token, or listen on 127.0.0.1"
            )
        return value

    def networks(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        """``allow`` as networks."""
        return [ipaddress.ip_network(e, strict=False) for e in self.allow]

    @field_validator("connect")
    @classmethod
    def _connect(cls, value: list[str]) -> list[str]:
        for uri in value:
            if not re.fullmatch(r"tcp://[^\s:/]+:\d{1,5}", uri.strip()):
                raise ValueError(f"each must look like tcp://HOST:PORT, not {uri!r}")
        return [u.strip() for u in value]

    @field_validator("hub")
    @classmethod
    def _uri(cls, value: str) -> str:
        if value and not re.fullmatch(r"tcp://[^\s:/]+:\d{1,5}", value):
            raise ValueError(f"must look like tcp://HOST:PORT, not {value!r}")
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if value and not re.fullmatch(r"[\w .-]{1,64}", value):
            raise ValueError("must be 1-64 letters, digits, spaces, dots, dashes or underscores")
        return value
