"""A real Redis channel layer that hands messages back late, as a loaded server's does: under the
websocket replay load of benchmarks/load.py the health check's round trip took more than its 2 s
(16-17 of 19 polls), while Redis itself answered (issue 34)."""

from __future__ import annotations

import asyncio

from channels_redis.core import RedisChannelLayer


class SlowReceiveRedisChannelLayer(RedisChannelLayer):
    """Sends at once (Redis answers); each receive waits RECEIVE_DELAY seconds first."""

    RECEIVE_DELAY = 3.0

    async def receive(self, channel):
        await asyncio.sleep(self.RECEIVE_DELAY)
        return await super().receive(channel)
