"""Values handed from one step of a fleet run to the next, as JSON in the run file store
(quarry.files.run_files): on S3 when the lake's data is, so a step on one worker host reads
what a step on another wrote. Dagster's default I/O manager pickles to the local
DAGSTER_HOME, which only its own host can read."""

from __future__ import annotations

import json
from typing import Any

from dagster import ConfigurableIOManager, InputContext, OutputContext

from quarry.files import FileStore, run_files
from quarry.settings import load_settings


class RunFilesIOManager(ConfigurableIOManager):
    """JSON values under runs/<run id>/<step>/<output>[/<mapping key>].json."""

    def _files(self) -> FileStore:
        return run_files(load_settings())

    @staticmethod
    def _key(context: OutputContext) -> str:
        # Dagster's own identifier: run id, step key, output name, mapping key if any.
        return "/".join(context.get_identifier()) + ".json"

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        if obj is None:
            return
        self._files().put_bytes(self._key(context), json.dumps(obj).encode())

    def load_input(self, context: InputContext) -> Any:
        upstream = context.upstream_output
        assert upstream is not None
        data = self._files().get_bytes(self._key(upstream))
        if data is None:
            raise FileNotFoundError(f"no value of {upstream.step_key}.{upstream.name}")
        return json.loads(data)
