"""``/docs``: Swagger UI served by the service itself, so that it works offline."""

from __future__ import annotations

import re
from pathlib import Path

from test_api_support import app_client, fake_pool, settings_for, write_library


async def test_docs_page_loads_nothing_from_outside_the_service(tmp_path: Path) -> None:
    pool = fake_pool("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1")
    async with app_client(settings_for(write_library(tmp_path / "rubrics")), pool) as running:
        http = running[0]
        page = await http.get("/docs")
        assert page.status_code == 200, page.text
        outside = re.findall(r"""https?://[^\s"'<>]+""", page.text)
        assert outside == [], outside
        refs = re.findall(r"""(?:src|href)="([^"]+)\"""", page.text)
        scripts = [r for r in refs if r.endswith(".js")]
        styles = [r for r in refs if r.endswith(".css")]
        assert scripts and styles, refs
        for ref in refs:
            asset = await http.get(ref)
            assert asset.status_code == 200, ref
            assert asset.content, ref
        assert "SwaggerUIBundle" in (await http.get(scripts[0])).text
        # The document the page reads is served too, and no other docs page points outside.
        assert "/openapi.json" in page.text
        assert (await http.get("/openapi.json")).status_code == 200
        assert (await http.get("/redoc")).status_code == 404
        assert (await http.get("/docs/assets/index.html")).status_code == 404
