// The student's name on the instructor's class view (/class): 학생 N in order of first arrival, or a nickname given
// here. The box knows who this is by the page's cookie (lab_student); the form stays hidden where the class view is off.
const form = document.getElementById("nickname");
const input = document.getElementById("nickname-name");
const result = document.getElementById("nickname-result");

function said(words, status) {
  result.textContent = words;
  result.dataset.status = String(status);
}

async function show() {
  const response = await fetch("/api/class/me", { cache: "no-store" }).catch(() => null);
  if (!response || !response.ok) return; // no class view here, or no key yet: nothing to name
  const me = await response.json();
  input.value = me.nickname;
  input.placeholder = me.name || "아직 요청 전 (학생 N)";
  form.hidden = false;
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const response = await fetch("/api/class/me", {
    method: "PUT",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ name: input.value }),
  }).catch(() => null);
  if (!response) return said("보내지 못했습니다: 상자가 답하지 않습니다", "gone");
  const body = await response.json().catch(() => ({}));
  if (response.ok) {
    input.value = body.nickname;
    input.placeholder = body.name;
    return said(`수업 화면에 “${body.name}”(으)로 보입니다`, response.status);
  }
  said(response.status === 422 ? "20자 안으로, 줄바꿈·제어 문자 없이 써 주세요" : `바꾸지 못했습니다 (${response.status})`, response.status);
});

show();
