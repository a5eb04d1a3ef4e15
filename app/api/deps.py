"""Shared dependencies: the service and the caller's tenant (API key -> tenant; wrong or missing key: 401)."""
from __future__ import annotations

from typing import Optional

from fastapi import Depends, HTTPException, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="API key (maps to a tenant)")
bearer = HTTPBearer(auto_error=False, description="the API key as a bearer token")


def get_service(request: Request):
    return request.app.state.service


def tenant(request: Request, key: Optional[str] = Security(api_key_header),
           token: Optional[HTTPAuthorizationCredentials] = Security(bearer), service=Depends(get_service)) -> str:
    api_key = key or (token.credentials if token else None)
    found = service.tenant_for_key(api_key)
    if not found:
        raise HTTPException(401, "missing or unknown API key (send X-API-Key or Authorization: Bearer)",
                            headers={"WWW-Authenticate": "Bearer"})
    request.state.tenant = found
    return found
