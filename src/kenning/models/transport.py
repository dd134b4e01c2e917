"""The HTTP opener every model client uses (embedders, rerankers, chat models): the standard
library's, with redirects refused.

urllib follows a 302 answer to a POST by sending a GET to the new address with the same headers,
`Authorization` included, so a model server (or whoever answers in its place) could pass your key to
any host. A model API has no reason to redirect: kenning stops and names the address instead, and
the user configures the final one."""

from __future__ import annotations

import urllib.error
import urllib.request


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise urllib.error.HTTPError(
            req.full_url,
            code,
            f"redirected to {newurl}, which kenning does not follow (it would carry your key there): "
            "configure the final address",
            headers,
            fp,
        )


def opener() -> urllib.request.OpenerDirector:
    """An opener with the environment's proxies (read now) that never follows a redirect."""
    return urllib.request.build_opener(_RefuseRedirects)
