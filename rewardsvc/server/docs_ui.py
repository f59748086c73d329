"""The interactive API docs: Swagger UI at ``/docs``, its script and styles served from the
installed ``swagger-ui-bundle-v2`` package, never from a CDN, so that the page works on a
machine without internet access. ReDoc is off (``/redoc`` is not served): no package
here ships it, and one docs page over the same OpenAPI document is enough."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse
from swagger_ui_bundle import swagger_ui_path

from rewardsvc.core.errors import ErrorKind, RequestError

DOCS_PATH = "/docs"
ASSETS_PATH = "/docs/assets"
ASSETS = {
    "swagger-ui-bundle.js": "application/javascript",
    "swagger-ui.css": "text/css",
    "favicon-32x32.png": "image/png",
}
"""The files of swagger-ui's dist the page loads (a fixed list: the dist's own index.html
would load its demo document from the internet)."""

router = APIRouter(include_in_schema=False)


@router.get(DOCS_PATH)
async def swagger_ui(request: Request) -> HTMLResponse:
    """Swagger UI over this service's OpenAPI document, everything from this service."""
    root = request.scope.get("root_path", "").rstrip("/")
    return get_swagger_ui_html(
        openapi_url=f"{root}{request.app.openapi_url}",
        title=f"{request.app.title} - API",
        swagger_js_url=f"{root}{ASSETS_PATH}/swagger-ui-bundle.js",
        swagger_css_url=f"{root}{ASSETS_PATH}/swagger-ui.css",
        swagger_favicon_url=f"{root}{ASSETS_PATH}/favicon-32x32.png",
        oauth2_redirect_url=None,
    )


@router.get(ASSETS_PATH + "/{name}")
async def swagger_ui_asset(name: str) -> FileResponse:
    """One file of the Swagger UI page (404 for any other name)."""
    media = ASSETS.get(name)
    if media is None:
        raise RequestError(f"no asset {name!r}", kind=ErrorKind.NOT_FOUND)
    return FileResponse(str(swagger_ui_path / name), media_type=media)
