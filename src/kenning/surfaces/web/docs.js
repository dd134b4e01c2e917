// The interactive API page (/docs): Swagger UI from the files the fastapi-offline package installs, reading
// /openapi.json. Every request it makes, the description's own included, carries the token the web
// page keeps for this tab (asked for here when the server wants one and the tab has none).
"use strict";

async function tokenIfNeeded() {
  let token = sessionStorage.getItem("kenning-token");
  const probe = () => fetch("/openapi.json", { headers: token ? { Authorization: "Bearer " + token } : {} });
  let response = await probe();
  while (response.status === 401) {
    token = prompt("This kenning server needs its token:");
    if (!token) break;
    sessionStorage.setItem("kenning-token", token);
    response = await probe();
  }
}

tokenIfNeeded().finally(() => {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    requestInterceptor: (request) => {
      const token = sessionStorage.getItem("kenning-token");
      if (token) request.headers.Authorization = "Bearer " + token;
      return request;
    },
  });
});
