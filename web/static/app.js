// dashcam's page: wires the state (store.js, held in the URL), the API
// client (api.js) and the components, each in its own module and mounted on
// its own part of index.html. Components talk only through the store: a
// component that changes what is shown calls store.set; every component
// that shows something of the current search subscribes and reloads.
import { createApi } from "./api.js";
import { createColors } from "./colors.js";
import { mountContext } from "./context.js";
import { mountExport } from "./export.js";
import { mountHistogram } from "./histogram.js";
import { mountHits } from "./hits.js";
import { mountInsights } from "./insights.js";
import { mountKeyPrompt } from "./key_prompt.js";
import { mountPatterns } from "./patterns.js";
import { mountQueryBar } from "./query_bar.js";
import { mountRuns } from "./runs.js";
import { mountSidebar } from "./sidebar.js";
import { createStore } from "./store.js";
import { mountTail } from "./tail.js";
import { mountTimeRange } from "./time_range.js";
import { mountViews } from "./views.js";

const statusLine = document.getElementById("status");
const setStatus = (message) => {
  statusLine.textContent = message;
};

const api = createApi();
const store = createStore();
const ctx = { api, store, setStatus, colors: createColors() };

mountKeyPrompt(ctx);
mountQueryBar(ctx);
mountTimeRange(ctx);
mountHits(ctx);
mountContext(ctx);
mountHistogram(ctx);
mountSidebar(ctx);
mountInsights(ctx);
mountViews(ctx);
mountRuns(ctx);
mountPatterns(ctx);
mountTail(ctx);
mountExport(ctx);
