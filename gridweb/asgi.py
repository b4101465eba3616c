"""ASGI entry point: Django for HTTP, Channels for websockets."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gridweb.settings")

# Set up Django (apps, settings) before anything imports models through consumers.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from gridweb.routing import websocket_urlpatterns  # noqa: E402
from gridweb.web.origin import SameOriginValidator  # noqa: E402
from gridweb.web.upload_guard import BodyLimit, install_in_daphne  # noqa: E402

install_in_daphne()  # (under daphne: refused bodies dropped as they come, chunked ones capped, no form parsing)

application = ProtocolTypeRouter(
    {
        # a body past its path's limit (an upload's or DATA_UPLOAD_MAX_MEMORY_SIZE): 413 before Django reads it
        "http": BodyLimit(django_asgi_app),
        # a page of another site may not open a socket with this site's cookie (gridweb/web/origin.py)
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
