"""The web table and the operator's back office: plain ES modules, CSS and HTML, served
by the gateway on the server's own port (``server.gateway.static``; docs/embedding.md).

A package only so that the files ship with the wheel (``importlib.resources``); there is
no Python here. The page's texts are the shared catalogs in ``texts/locales`` (served as
``/locales/<language>.json``). The page must never decide or compute a rule of the game.
"""
