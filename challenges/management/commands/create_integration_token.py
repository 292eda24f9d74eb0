from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = (
        "Create (or reuse) a user in the Integrations group and print its API token, "
        "which may record attempts and nothing more."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username: str, **options):
        user, created = get_user_model().objects.get_or_create(username=username)
        if created:
            user.set_unusable_password()
            user.save()
        user.groups.add(Group.objects.get(name="Integrations"))
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)
