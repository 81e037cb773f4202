// activities: the activities and their pending tasks. No Step Functions operation lists an
// activity's waiting tasks; the server counts them through Amazon SWF's
// CountPendingActivityTasks on the domain named after the account (the activity-worker mapping,
// docs/serve.md), so the page shows each activity's count of tasks scheduled and not yet taken.

import { sfn, swf, accountOf } from "./api.js";
import { h, replace, formatDate, errorBox, pageTitle } from "./dom.js";

export async function activitiesPage(main) {
  let activities = [];
  try {
    let token = null;
    do {
      const page = await sfn("ListActivities", { maxResults: 1000, ...(token ? { nextToken: token } : {}) });
      activities.push(...(page.activities ?? []));
      token = page.nextToken;
    } while (token);
  } catch (error) {
    replace(main, pageTitle("Activities"), errorBox(error, "ListActivities"));
    return;
  }
  activities = activities.sort((a, b) => a.name.localeCompare(b.name));
  const rows = activities.map((a) => {
    const pending = h("td", { class: "num" }, "…");
    swf("CountPendingActivityTasks", { domain: accountOf(a.activityArn), taskList: { name: a.activityArn } })
      .then((answer) => { pending.textContent = `${answer.count}${answer.truncated ? "+" : ""}`; })
      .catch((error) => { pending.textContent = `— (${error.type})`; });
    return h("tr", {}, h("th", { scope: "row" }, a.name), h("td", {}, formatDate(a.creationDate)), pending, h("td", {}, h("code", {}, a.activityArn)));
  });
  replace(main, pageTitle("Activities"),
    h("p", { class: "help" }, "Pending tasks are those scheduled for the activity and not yet taken by a worker (GetActivityTask). Step Functions has no operation that lists them; the count comes from the server's Amazon SWF activity-worker mapping (CountPendingActivityTasks)."),
    h("div", { class: "table-scroll card" }, h("table", { class: "list", id: "activities-table" },
      h("caption", { class: "sr-only" }, "Activities"),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Name"), h("th", { scope: "col" }, "Created"),
        h("th", { scope: "col", class: "num" }, "Pending tasks"), h("th", { scope: "col" }, "ARN"))),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: "4", class: "empty" }, "No activities."))))));
}
