from . import (
    collections,  # noqa: F401 - the collections' ModelAdmins
    modeladmins,  # noqa: F401 - Django autodiscovers challenges.admin: register the ModelAdmins
    redblue,  # noqa: F401 - red/blue's ModelAdmins
    webhooks,  # noqa: F401 - the webhooks' ModelAdmins
)
