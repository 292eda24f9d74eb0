"""The "Scoring staff" group: staff who watch challenges and rescore jobs in the admin.

It grants *view* permissions only. Starting and cancelling a rescore needs no model
permission (any staff member may: ``challenges.permissions.is_staff_member``), and
nothing here lets a member change a challenge's scoring setup.
"""

from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUP = "Scoring staff"
VIEW_MODELS = ("challenge", "attempt", "player", "scoringversion", "attemptscore", "rescorejob")


def create_group(apps, schema_editor):
    # Permissions are normally created after all migrations; make sure they exist now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name=GROUP)
    group.permissions.add(
        *Permission.objects.filter(
            content_type__app_label="challenges",
            codename__in=[f"view_{model}" for model in VIEW_MODELS],
        )
    )


def remove_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("challenges", "0003_rescore_jobs"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [migrations.RunPython(create_group, remove_group)]
