// harness view: filters apply on change; a thumbnail opens enlarged over the page (Escape or a click closes it).
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("form.filters select, form.inline select").forEach((select) => {
    select.addEventListener("change", () => select.form.submit());
  });
  document.querySelectorAll("a.image").forEach((link) => {
    link.addEventListener("click", (event) => {
      if (event.ctrlKey || event.metaKey || event.shiftKey) return;
      event.preventDefault();
      const box = document.createElement("div");
      box.id = "lightbox";
      const image = document.createElement("img");
      image.src = link.getAttribute("href");
      image.alt = link.title;
      box.appendChild(image);
      box.addEventListener("click", () => box.remove());
      document.body.appendChild(box);
    });
  });
  document.addEventListener("keydown", (event) => {
    const box = document.getElementById("lightbox");
    if (event.key === "Escape" && box) box.remove();
  });
});
