"""The WSGI entry (gunicorn ``config.wsgi``)."""

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# What loading the app made (modules, settings, URL patterns, models: about 100,000
# objects) lives as long as the process: move it out of the cyclic collector's reach, so
# that a full collection during a request scans what requests made, not all of it (the
# commit that added this has the measurement).
gc.freeze()
