"""The ASGI entry (uvicorn ``config.asgi:application``): every page, and the event
streams, which need it (an async view holds no thread while it waits). In development
static files are served as ``runserver`` serves them."""

import os

from django.conf import settings
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_asgi_application()

if settings.DEBUG:
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    application = ASGIStaticFilesHandler(application)
