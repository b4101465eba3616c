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
from gridweb.web.upload_guard import UploadGuard, install_in_daphne  # noqa: E402

install_in_daphne()  # (under daphne: refused bodies dropped as they come, no form parsing by Twisted)

application = ProtocolTypeRouter(
    {
        "http": UploadGuard(django_asgi_app),  # an oversize or chunked upload: refused before it is read
        # a page of another site may not open a socket with this site's cookie (gridweb/web/origin.py)
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
