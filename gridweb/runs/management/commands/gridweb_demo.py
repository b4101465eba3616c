"""``python manage.py gridweb_demo [--run-now] [--reset]``: the demo runs (see gridweb.runs.demo) and
every paper's quick reproduction (gridweb.reproductions.demo)."""

from django.core.management.base import BaseCommand, CommandError

from gridweb.reproductions.demo import load_demo_reproductions
from gridweb.runs.demo import demo_user, load_demo
from gridweb.scenarios.traces import TraceInvalid
from gridweb.scenarios.validation import SpecInvalid


class Command(BaseCommand):
    help = ("Store the shipped workload traces as public traces of the 'gridweb-demo' user and create the curated "
            "demo runs and every paper's quick reproduction that do not exist yet (idempotent).")

    def add_arguments(self, parser):
        parser.add_argument("--run-now", action="store_true",
                            help="simulate queued demo runs here and now instead of handing them to a worker")
        parser.add_argument("--reset", action="store_true", help="delete the demo runs first and simulate them again")

    def handle(self, *args, run_now: bool = False, reset: bool = False, **options):
        try:
            outcome = load_demo(run_now=run_now, reset=reset, say=self.stdout.write)
        except (TraceInvalid, SpecInvalid) as exc:
            raise CommandError(f"demo data: {exc}") from exc
        reproductions = load_demo_reproductions(demo_user(), run_now=run_now, reset=reset, say=self.stdout.write)
        failed_reproductions = [rep for rep, what in reproductions if what == "failed"]
        if failed_reproductions:
            raise CommandError("demo reproductions failed: " + "; ".join(f"#{rep.pk} {rep.error}"
                                                                         for rep in failed_reproductions))
        failed = [run for run, result in outcome.executed if result == "failed"]
        self.stdout.write(self.style.SUCCESS(
            f"demo: {len(outcome.created)} created, {len(outcome.existing)} already there, "
            f"{len(outcome.executed)} simulated now"))
        if failed:
            raise CommandError("demo runs failed: " + "; ".join(f"#{run.pk} {run.error}" for run in failed))
